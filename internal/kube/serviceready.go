package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// How a new Service is waited for.
const (
	serviceWait = 30 * time.Second
	// ProxyHealthPort is where kube-proxy reports its health on a node
	// (--healthz-bind-address; 10256 by default): when it last wrote its
	// rules.
	ProxyHealthPort = 10256
	// proxySettle is how long a Service is given after its endpoints are
	// ready where no node's kube-proxy reports its health here: its
	// rules follow within its minimum sync period (1 s by default).
	proxySettle = 2 * time.Second
)

// ServiceReady waits until Service s carries traffic: its endpoints list a
// ready pod, and then every node's kube-proxy (at nodeIPs) has written its
// rules since. A kube-proxy reports that on its health port (lastUpdated);
// where none of them can be reached from here, ServiceReady waits
// proxySettle after the endpoints instead, and says so (settled false).
// Before that, a connection to the Service can go nowhere: its SYN is not
// translated yet.
func (c *Client) ServiceReady(ctx context.Context, s *Service, nodeIPs []string) (settled bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, serviceWait)
	defer cancel()
	ready, err := c.endpointsReady(ctx, s)
	if err != nil {
		return false, err
	}
	reached := 0
	for _, ip := range nodeIPs {
		ok, err := proxySynced(ctx, ip, ready)
		if err != nil {
			return false, fmt.Errorf("service %s/%s: %w", s.Namespace, s.Name, err)
		}
		if ok {
			reached++
		}
	}
	if reached == 0 {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(proxySettle):
		}
		return false, nil
	}
	return true, nil
}

// endpointsReady waits until s's endpoints list a ready address, and
// says when that was seen.
func (c *Client) endpointsReady(ctx context.Context, s *Service) (time.Time, error) {
	for {
		ep, err := c.cs.CoreV1().Endpoints(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
		if err == nil {
			for _, sub := range ep.Subsets {
				if len(sub.Addresses) > 0 {
					return time.Now(), nil
				}
			}
		} else if !apierrors.IsNotFound(err) {
			return time.Time{}, fmt.Errorf("reading the endpoints of service %s/%s: %w", s.Namespace, s.Name, err)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("service %s/%s: no ready endpoint after %v (is its pod Ready?)", s.Namespace, s.Name, serviceWait)
		case <-time.After(pollEvery):
		}
	}
}

// proxySynced waits until the kube-proxy of the node at ip has written
// its rules after since; false, at once, when its health port does not
// answer from here.
func proxySynced(ctx context.Context, ip string, since time.Time) (bool, error) {
	url := "http://" + net.JoinHostPort(ip, fmt.Sprint(ProxyHealthPort)) + "/healthz"
	cl := &http.Client{Timeout: time.Second}
	for first := true; ; first = false {
		h, err := proxyHealth(ctx, cl, url)
		if err != nil {
			if first {
				return false, nil
			}
			return false, fmt.Errorf("kube-proxy at %s stopped answering: %w", url, err)
		}
		// Its clock and this machine's are compared: the same clock on
		// an emulated cluster, an NTP-kept one elsewhere.
		if h.LastUpdated.After(since) {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("kube-proxy at %s has not written its rules since the endpoints were ready (last %s)", url, h.LastUpdated.Format(time.RFC3339Nano))
		case <-time.After(pollEvery):
		}
	}
}

type proxyHealthz struct {
	LastUpdated time.Time `json:"lastUpdated"`
}

func proxyHealth(ctx context.Context, cl *http.Client, url string) (proxyHealthz, error) {
	var h proxyHealthz
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return h, err
	}
	resp, err := cl.Do(req)
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&h)
	return h, err
}

// DeleteService deletes Service s; one already gone is no error.
func (c *Client) DeleteService(ctx context.Context, s *Service) error {
	err := c.cs.CoreV1().Services(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting service %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}
