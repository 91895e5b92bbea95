package kube

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrbench/ctrbench/internal/owner"
)

// Clean deletes what ctrbench left on the cluster, typically after a run
// was killed: every namespace labelled as ctrbench's (of campaign, or of
// all campaigns when campaign is ""), with all in it, but those whose
// owner process is still a running ctrbench on this machine. It waits
// until each is gone and returns the names of those removed; failures to
// remove one do not stop the others and are returned joined.
func (c *Client) Clean(ctx context.Context, campaign string) (removed []string, err error) {
	list, err := c.cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: campaignSelector(campaign)})
	if err != nil {
		return nil, fmt.Errorf("listing ctrbench's namespaces on %s: %w", c.host, err)
	}
	// All deletions are asked for first, then waited for: the namespace
	// controller works on them together.
	var errs []error
	var asked []string
	for _, ns := range list.Items {
		if owner.Running(ns.Labels) {
			continue
		}
		if err := c.deleteNamespace(ctx, ns.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		asked = append(asked, ns.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, namespaceGoneWait)
	defer cancel()
	for _, ns := range asked {
		if err := c.waitNamespaceGone(ctx, ns); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, ns)
	}
	return removed, errors.Join(errs...)
}
