package scheduling_test

import "k8s.io/apimachinery/pkg/api/resource"

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
