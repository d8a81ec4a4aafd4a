package live

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/nap-k8s/nap/kube"
)

// ServedDoors are the kinds of front doors nap reads (kube.Doors) that the API server
// serves, each at the first version it lists for it (the preferred first): none of a
// project whose API is not installed.
func ServedDoors(d discovery.DiscoveryInterface) ([]schema.GroupVersionKind, error) {
	groups, err := d.ServerGroups()
	if err != nil {
		return nil, err
	}
	var out []schema.GroupVersionKind
	for _, g := range groups.Groups {
		if !slices.ContainsFunc(kube.Doors, func(d kube.Door) bool { return d.Group == g.Name }) {
			continue
		}
		versions := []string{g.PreferredVersion.Version}
		for _, v := range g.Versions {
			if v.Version != g.PreferredVersion.Version {
				versions = append(versions, v.Version)
			}
		}
		seen := map[string]bool{}
		for _, v := range versions {
			rl, err := d.ServerResourcesForGroupVersion(g.Name + "/" + v)
			if err != nil {
				return nil, err
			}
			for _, r := range rl.APIResources {
				for _, door := range kube.Doors {
					if door.Group == g.Name && door.Resource == r.Name && !seen[r.Name] {
						seen[r.Name] = true
						out = append(out, door.GVK(v))
					}
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionKind) int {
		return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Kind, b.Kind))
	})
	return out, nil
}

// ServedClassParams is the version of the IngressClassParams the API server serves
// (its group's preferred version that has them), "" where it serves none.
func ServedClassParams(d discovery.DiscoveryInterface) (string, error) {
	groups, err := d.ServerGroups()
	if err != nil {
		return "", err
	}
	for _, g := range groups.Groups {
		if g.Name != kube.IngressClassParamsGroup {
			continue
		}
		versions := []string{g.PreferredVersion.Version}
		for _, v := range g.Versions {
			if v.Version != g.PreferredVersion.Version {
				versions = append(versions, v.Version)
			}
		}
		for _, v := range versions {
			rl, err := d.ServerResourcesForGroupVersion(g.Name + "/" + v)
			if err != nil {
				return "", err
			}
			for _, r := range rl.APIResources {
				if r.Name == kube.IngressClassParamsResource {
					return v, nil
				}
			}
		}
	}
	return "", nil
}

// doorResource is the resource of a door's kind at gvk's version.
func doorResource(gvk schema.GroupVersionKind) schema.GroupVersionResource {
	d, _ := kube.DoorOf(gvk.Group, gvk.Kind)
	return gvk.GroupVersion().WithResource(d.Resource)
}

// Unread are the front doors' resources (and the Ingresses' classes') that Read was not
// allowed to list: their objects are not among what it returned, so the paths they open
// (or, for a class, decide) are not seen.
type Unread []schema.GroupResource

func (u Unread) Error() string {
	var names []string
	for _, r := range u {
		names = append(names, r.String())
	}
	return fmt.Sprintf("not allowed to list %s: the routes to the pods those objects open or decide are not seen", strings.Join(names, ", "))
}
