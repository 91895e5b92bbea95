package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ctrbench/ctrbench/internal/owner"
	"github.com/ctrbench/ctrbench/internal/platform"
)

// Bounds of the namespace waits: a new namespace's default service
// account comes within about a second (the controller manager makes it;
// until then pods are refused); a deleted namespace goes once its pods
// have, which ctrbench's (grace period 0) do in seconds.
const (
	serviceAccountWait = 30 * time.Second
	namespaceGoneWait  = 2 * time.Minute
	pollEvery          = 100 * time.Millisecond
)

// EnsureNamespace makes the campaign's namespace (NamespaceName), labelled
// as ctrbench's, this process its owner, unless it exists, and waits until
// its default service account does, so pods can be created in it. It
// returns the namespace's name.
func (c *Client) EnsureNamespace(ctx context.Context, campaign string) (string, error) {
	return c.ensureNamespace(ctx, campaign, owner.Labels(campaign))
}

// ensureNamespace is EnsureNamespace with the labels given.
func (c *Client) ensureNamespace(ctx context.Context, campaign string, labels map[string]string) (string, error) {
	if campaign == "" {
		return "", errors.New("no campaign ID: a namespace belongs to a campaign")
	}
	if msgs := validation.IsValidLabelValue(campaign); len(msgs) > 0 {
		return "", fmt.Errorf("campaign ID %q cannot label Kubernetes objects (%s): ctrbench's IDs can", campaign, strings.Join(msgs, "; "))
	}
	name := NamespaceName(campaign)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	_, err := c.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating namespace %s for campaign %s: %w", name, campaign, err)
	}
	c.mu.Lock()
	c.campaigns[name] = campaign
	c.mu.Unlock()
	if err := c.waitServiceAccount(ctx, name); err != nil {
		return "", err
	}
	return name, nil
}

// waitServiceAccount waits until namespace ns has its default service
// account (serviceAccountWait at most).
func (c *Client) waitServiceAccount(ctx context.Context, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, serviceAccountWait)
	defer cancel()
	for {
		_, err := c.cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		switch {
		case err == nil:
			return nil
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("waiting for the default service account of namespace %s: %w", ns, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s has no default service account after %v: is the cluster's kube-controller-manager running?", ns, serviceAccountWait)
		case <-time.After(pollEvery):
		}
	}
}

// campaignOf is the campaign label of namespace ns, which labels what is
// made in it; looked up once per namespace.
func (c *Client) campaignOf(ctx context.Context, ns string) (string, error) {
	c.mu.Lock()
	campaign, ok := c.campaigns[ns]
	c.mu.Unlock()
	if ok {
		return campaign, nil
	}
	n, err := c.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("looking up namespace %s (make it with EnsureNamespace): %w", ns, err)
	}
	campaign = n.Labels[platform.LabelCampaign]
	if n.Labels[platform.LabelManaged] != "true" || campaign == "" {
		return "", fmt.Errorf("namespace %s is not ctrbench's (no %s label): ctrbench makes its objects only in the namespaces it made", ns, platform.LabelCampaign)
	}
	c.mu.Lock()
	c.campaigns[ns] = campaign
	c.mu.Unlock()
	return campaign, nil
}

// DeleteNamespace deletes namespace ns and what is in it, and waits until
// it is gone (namespaceGoneWait at most). A namespace already gone is no
// error.
func (c *Client) DeleteNamespace(ctx context.Context, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, namespaceGoneWait)
	defer cancel()
	if err := c.deleteNamespace(ctx, ns); err != nil {
		return err
	}
	return c.waitNamespaceGone(ctx, ns)
}

// deleteNamespace asks for namespace ns's deletion. The namespace
// controller then deletes what is in it, and the namespace last: seconds.
func (c *Client) deleteNamespace(ctx context.Context, ns string) error {
	err := c.cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationBackground)})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting namespace %s: %w", ns, err)
	}
	c.mu.Lock()
	delete(c.campaigns, ns)
	c.mu.Unlock()
	return nil
}

// waitNamespaceGone waits until namespace ns is gone, as long as ctx
// allows.
func (c *Client) waitNamespaceGone(ctx context.Context, ns string) error {
	for {
		n, err := c.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil && ctx.Err() == nil:
			return fmt.Errorf("waiting for namespace %s to go: %w", ns, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s still there after its deletion (%s): see kubectl describe namespace %s", ns, namespaceState(n), ns)
		case <-time.After(pollEvery):
		}
	}
}

// namespaceState says why a namespace being deleted is still there, as its
// conditions do.
func namespaceState(n *corev1.Namespace) string {
	if n == nil {
		return "state unknown"
	}
	s := "phase " + string(n.Status.Phase)
	for _, cond := range n.Status.Conditions {
		if cond.Status == corev1.ConditionTrue {
			s += "; " + cond.Message
		}
	}
	return s
}

func ptr[T any](v T) *T { return &v }
