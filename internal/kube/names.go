package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// namespacePrefix starts the name of every namespace ctrbench makes.
const namespacePrefix = "ctb-"

var nonLabel = regexp.MustCompile(`[^a-z0-9-]+`)

// NamespaceName is the namespace of a campaign: "ctb-" and the campaign's
// ID, a valid DNS-1123 label (ctrbench's IDs are already lowercase
// letters, digits and '-', and stay as they are). Any other ID is
// lowercased, each run of characters a label cannot hold made one '-',
// cut to fit 63 characters, and ends in 8 hex digits of the ID's hash, so
// two IDs that differ only in what was changed or cut still get two
// namespaces.
func NamespaceName(campaign string) string {
	return namespacePrefix + labelOf(campaign, 63-len(namespacePrefix), "campaign")
}

// PodName is the pod of an instance named name, as labelOf makes it a
// DNS-1123 label: the pairs of a trial, whose instances' names differ only
// at their ends, keep names of their own when cut to 63 characters.
func PodName(name string) string { return labelOf(name, 63, "pod") }

// labelOf is s as a DNS-1123 label of at most max characters: s itself
// when it is one; else lowercased, each run of characters a label cannot
// hold made one '-', cut to fit, and ending in 8 hex digits of s's hash
// (empty when nothing of s is left), so two strings that differ only in
// what was changed or cut still get two labels.
func labelOf(s string, max int, empty string) string {
	l := strings.Trim(nonLabel.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if l == s && l != "" && len(l) <= max {
		return l
	}
	if len(l) > max-9 {
		l = strings.TrimRight(l[:max-9], "-")
	}
	sum := sha256.Sum256([]byte(s))
	if l == "" {
		l = empty
	}
	return l + "-" + hex.EncodeToString(sum[:4])
}
