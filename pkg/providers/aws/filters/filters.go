// Package filters turns EC2NodeClass selector terms into EC2 Describe filters, and describes a term in the
// words a status message uses ("tags karpenter.sh/discovery=demo"); Resolver runs the queries, de-duplicates,
// orders and caches what they select.
package filters

import (
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/mitchellh/hashstructure/v2"
)

// Tags returns one filter per tag, in key order: tag-key for the value "*", tag:<key> otherwise.
func Tags(tags map[string]string) []ec2types.Filter {
	var out []ec2types.Filter
	for _, k := range sortedKeys(tags) {
		if v := tags[k]; v == "*" {
			out = append(out, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
		} else {
			out = append(out, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{v}})
		}
	}
	return out
}

// One is a filter with one name and values.
func One(name string, values ...string) ec2types.Filter {
	return ec2types.Filter{Name: aws.String(name), Values: values}
}

// DescribeTags writes tags as "tags k1=v1,k2=v2" in key order.
func DescribeTags(tags map[string]string) string {
	parts := make([]string, 0, len(tags))
	for _, k := range sortedKeys(tags) {
		parts = append(parts, k+"="+tags[k])
	}
	return "tags " + strings.Join(parts, ",")
}

// Key hashes anything (selector terms, queries) into a cache key; slices are hashed as sets.
func Key(v any) string {
	h, err := hashstructure.Hash(v, hashstructure.FormatV2, &hashstructure.HashOptions{SlicesAsSets: true})
	if err != nil {
		panic(fmt.Sprintf("hashing a cache key: %v", err))
	}
	return fmt.Sprint(h)
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
