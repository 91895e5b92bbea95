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
	s := strings.Trim(nonLabel.ReplaceAllString(strings.ToLower(campaign), "-"), "-")
	const max = 63 - len(namespacePrefix)
	if s == campaign && s != "" && len(s) <= max {
		return namespacePrefix + s
	}
	if len(s) > max-9 {
		s = strings.TrimRight(s[:max-9], "-")
	}
	sum := sha256.Sum256([]byte(campaign))
	if s == "" {
		s = "campaign"
	}
	return namespacePrefix + s + "-" + hex.EncodeToString(sum[:4])
}
