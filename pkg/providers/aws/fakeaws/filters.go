package fakeaws

import (
	"strconv"
	"strings"
)

// filter is one EC2 Filter.N: a name and the values any of which may match.
type filter struct {
	Name   string
	Values []string
}

// filtersOf reads Filter.N.Name / Filter.N.Value.M.
func filtersOf(q query) []filter {
	var out []filter
	for _, f := range q.List("Filter") {
		out = append(out, filter{Name: f["Name"], Values: f.Strings("Value")})
	}
	return out
}

// matchFilters reports whether a resource passes every filter (filters are ANDed, a filter's values
// ORed, as in EC2). fields answers a filter name with the resource's values for it (nil when the
// resource has no such field); tags are matched for tag:<key> and tag-key without the resource's help.
func matchFilters(filters []filter, tags map[string]string, fields func(name string) []string) bool {
	for _, f := range filters {
		var have []string
		switch {
		case strings.HasPrefix(f.Name, "tag:"):
			if v, ok := tags[strings.TrimPrefix(f.Name, "tag:")]; ok {
				have = []string{v}
			}
		case f.Name == "tag-key":
			for k := range tags {
				have = append(have, k)
			}
		default:
			have = fields(f.Name)
		}
		if !anyMatch(f.Values, have) {
			return false
		}
	}
	return true
}

func anyMatch(patterns, values []string) bool {
	for _, p := range patterns {
		for _, v := range values {
			if wildcardMatch(p, v) {
				return true
			}
		}
	}
	return false
}

// wildcardMatch matches EC2 filter wildcards: * any run of characters, ? one character.
func wildcardMatch(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if wildcardMatch(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && wildcardMatch(pattern[1:], s[1:])
	}
	return s != "" && s[0] == pattern[0] && wildcardMatch(pattern[1:], s[1:])
}

// ec2Tag is a tag in an EC2 response (<tagSet><item><key/><value/></item></tagSet>).
type ec2Tag struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

// ec2Tags lists tags in key order, as EC2 responses carry them.
func ec2Tags(tags map[string]string) []ec2Tag {
	out := make([]ec2Tag, 0, len(tags))
	for k, v := range tags {
		out = append(out, ec2Tag{Key: k, Value: v})
	}
	sortTags(out)
	return out
}

func sortTags(tags []ec2Tag) {
	for i := 1; i < len(tags); i++ {
		for j := i; j > 0 && tags[j].Key < tags[j-1].Key; j-- {
			tags[j], tags[j-1] = tags[j-1], tags[j]
		}
	}
}

// tagSpecifications reads TagSpecification.N.ResourceType / .Tag.M.Key / .Tag.M.Value: resource type →
// tags.
func tagSpecifications(q query, prefix string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, spec := range q.List(prefix) {
		tags := out[spec["ResourceType"]]
		if tags == nil {
			tags = map[string]string{}
			out[spec["ResourceType"]] = tags
		}
		for _, t := range spec.List("Tag") {
			tags[t["Key"]] = t["Value"]
		}
	}
	return out
}

// page cuts n items into the page a MaxResults/NextToken pair asks for: items [start, end) and the token
// for the next page ("" on the last). Tokens are the decimal offset.
func page(q query, n, defaultMax int) (start, end int, next string, err error) {
	max, err := q.Int("MaxResults", defaultMax)
	if err != nil {
		return 0, 0, "", err
	}
	if max <= 0 {
		max = defaultMax
	}
	if tok := q["NextToken"]; tok != "" {
		start, err = strconv.Atoi(tok)
		if err != nil || start < 0 || start > n {
			return 0, 0, "", errorf("InvalidNextToken", "the token %q is not valid", tok)
		}
	}
	end = min(start+max, n)
	if end < n {
		next = strconv.Itoa(end)
	}
	return start, end, next, nil
}
