// Command lb is the lab's cloud load balancer (lab code, as cloud-provider-kind is): for
// every Service of type LoadBalancer it runs one HAProxy, in the load balancer's own
// network namespace, on an address of its own; HAProxy sends to every node's NodePort
// and health-checks what a cloud load balancer checks (the Service's healthCheckNodePort
// with externalTrafficPolicy Local, kube-proxy's :10256/healthz with Cluster); this
// program writes the address to the Service's status.loadBalancer.ingress. No proxy of
// nap's is in the data path: HAProxy is.
//
// Like a cloud load balancer it learns of a terminating pod only by its health checks,
// with cloud-like timings (the defaults are shaped like an AWS NLB's: a check every
// 10 s, a node out after 3 failures and back after 3 successes) that a Service can set
// by annotation (lb.lab.nap.dev/...); a node starts out of service until its checks
// pass, as a new target does; a node out of service keeps its open connections for the
// deregistration delay, then they are closed. Each HAProxy logs every connection in
// memory (package connlog), where the tests look up a failed request's connection.
//
// An Ingress of the class alb whose Service says alb.ingress.kubernetes.io/target-type:
// ip gets an application load balancer (pods.go), as the AWS Load Balancer Controller
// gives it an ALB in IP mode: HTTP, the pods as targets, one pool of reused server
// connections, and a pod deregistered only a lag after its endpoint stopped being
// ready; its address goes to the Ingress's status. The lab speaks the cloud's own
// words for it, so that nap reads the lab's load balancer as it reads an AWS user's.
//
//	go run ./hack/lb --kubeconfig K --netns nap-lb --range 10.77.1.0/24 --source 10.77.1.1 --dir DIR
package main
