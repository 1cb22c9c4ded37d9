package userdata

import (
	"fmt"
	"strings"
)

// parseCustom reads a Custom family's user data, which Lathe passes through verbatim, in whichever format it
// is in: a <powershell> block, a MIME document or NodeConfig for nodeadm (or a bootstrap.sh script), or
// Bottlerocket TOML. A document in none of them carries nothing a node could join with.
func parseCustom(doc string) (Node, error) {
	if strings.TrimSpace(doc) == "" {
		return Node{}, fmt.Errorf("reading Custom user data, it is empty (the node would not join)")
	}
	if strings.Contains(doc, "<powershell>") {
		return parseWindows(doc)
	}
	if isMIME(doc) {
		parts, err := readParts(doc)
		if err != nil {
			return Node{}, fmt.Errorf("reading Custom user data, %w", err)
		}
		for _, p := range parts {
			if mediaType(p.ContentType) == contentTypeNodeConfig {
				return parseAL2023(doc)
			}
		}
		return parseAL2(doc)
	}
	if strings.HasPrefix(strings.TrimSpace(doc), "#!") || strings.Contains(doc, bootstrapScript) {
		return parseAL2(doc)
	}
	if strings.Contains(doc, nodeConfigAPIVersion) {
		return parseAL2023(doc)
	}
	return parseBottlerocket(doc)
}
