package kube

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// The core API (v1) is all ctrbench asks of a cluster: pods, namespaces,
// nodes, Services, service accounts. client-go's clientset registers every
// API group's types (its scheme), which made the one ctrbench binary —
// also the agent in every image — two and a half times as large; this is
// its REST client with the core group's types alone, and typed calls of
// the same shape as the clientset's (c.cs.CoreV1().Pods(ns).Get(…)).

// scheme knows the core group's types and the meta types of its calls.
var (
	scheme         = runtime.NewScheme()
	codecs         = serializer.NewCodecFactory(scheme)
	parameterCodec = runtime.NewParameterCodec(scheme)
)

func init() {
	if err := corev1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
}

// coreClient is the core group's REST client.
type coreClient struct{ rc rest.Interface }

// newCore makes the core group's client for cfg.
func newCore(cfg *rest.Config) (*coreClient, error) {
	c := *cfg
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = codecs.WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(&c)
	if err != nil {
		return nil, err
	}
	return &coreClient{rc: rc}, nil
}

// CoreV1 is the client itself: calls read as the clientset's.
func (c *coreClient) CoreV1() *coreClient { return c }

// RESTClient is the REST client, for paths outside the core group
// (/version).
func (c *coreClient) RESTClient() rest.Interface { return c.rc }

func (c *coreClient) Pods(ns string) objects[corev1.Pod, corev1.PodList] {
	return objects[corev1.Pod, corev1.PodList]{c.rc, ns, "pods"}
}
func (c *coreClient) Namespaces() objects[corev1.Namespace, corev1.NamespaceList] {
	return objects[corev1.Namespace, corev1.NamespaceList]{c.rc, "", "namespaces"}
}
func (c *coreClient) Nodes() objects[corev1.Node, corev1.NodeList] {
	return objects[corev1.Node, corev1.NodeList]{c.rc, "", "nodes"}
}
func (c *coreClient) Services(ns string) objects[corev1.Service, corev1.ServiceList] {
	return objects[corev1.Service, corev1.ServiceList]{c.rc, ns, "services"}
}
func (c *coreClient) ServiceAccounts(ns string) objects[corev1.ServiceAccount, corev1.ServiceAccountList] {
	return objects[corev1.ServiceAccount, corev1.ServiceAccountList]{c.rc, ns, "serviceaccounts"}
}

// objects are the objects of one resource (in a namespace, for a
// namespaced one): T one, L a list of them.
type objects[T, L any] struct {
	rc       rest.Interface
	ns, kind string
}

func (o objects[T, L]) req(r *rest.Request) *rest.Request {
	return r.NamespaceIfScoped(o.ns, o.ns != "").Resource(o.kind)
}

func (o objects[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (*T, error) {
	out := new(T)
	err := o.req(o.rc.Get()).Name(name).VersionedParams(&opts, parameterCodec).Do(ctx).Into(any(out).(runtime.Object))
	return out, err
}

func (o objects[T, L]) List(ctx context.Context, opts metav1.ListOptions) (*L, error) {
	out := new(L)
	r := o.req(o.rc.Get()).VersionedParams(&opts, parameterCodec)
	if opts.TimeoutSeconds != nil {
		r = r.Timeout(time.Duration(*opts.TimeoutSeconds) * time.Second)
	}
	err := r.Do(ctx).Into(any(out).(runtime.Object))
	return out, err
}

func (o objects[T, L]) Create(ctx context.Context, obj *T, opts metav1.CreateOptions) (*T, error) {
	out := new(T)
	err := o.req(o.rc.Post()).VersionedParams(&opts, parameterCodec).Body(any(obj).(runtime.Object)).Do(ctx).Into(any(out).(runtime.Object))
	return out, err
}

func (o objects[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return o.req(o.rc.Delete()).Name(name).Body(&opts).Do(ctx).Error()
}

func (o objects[T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	r := o.req(o.rc.Get()).VersionedParams(&opts, parameterCodec)
	if opts.TimeoutSeconds != nil {
		r = r.Timeout(time.Duration(*opts.TimeoutSeconds) * time.Second)
	}
	return r.Watch(ctx)
}

// GetLogs is the request for pod name's log (Pods only).
func (o objects[T, L]) GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request {
	return o.rc.Get().Namespace(o.ns).Name(name).Resource("pods").SubResource("log").VersionedParams(opts, parameterCodec)
}
