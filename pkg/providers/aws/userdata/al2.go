package userdata

import (
	"fmt"
	"net/netip"
	"path"
	"strings"
)

const bootstrapScript = "/etc/eks/bootstrap.sh"

func renderAL2(o Options) (string, error) {
	parts, err := customPartsAL2(derefString(o.CustomUserData))
	if err != nil {
		return "", fmt.Errorf("merging the node class's userData, %w", err)
	}
	parts = append(parts, part{ContentType: contentTypeShell, Content: o.bootstrapShell()})
	return writeParts(parts)
}

// bootstrapShell is the script that calls /etc/eks/bootstrap.sh, one flag a line.
func (o Options) bootstrapShell() string {
	var b strings.Builder
	b.WriteString("#!/bin/bash -xe\n")
	b.WriteString("exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n")
	fmt.Fprintf(&b, "%s %s --apiserver-endpoint %s", bootstrapScript, shellQuote(o.ClusterName), shellQuote(o.ClusterEndpoint))
	if o.ClusterCABundle != "" {
		fmt.Fprintf(&b, " --b64-cluster-ca %s", shellQuote(o.ClusterCABundle))
	}
	dns := o.clusterDNS()
	if len(dns) > 0 && isIPv6(dns[0]) {
		b.WriteString(" \\\n--ip-family ipv6")
	}
	if len(dns) > 0 {
		fmt.Fprintf(&b, " \\\n--dns-cluster-ip %s", shellQuote(dns[0]))
	}
	if o.maxPods() != nil {
		b.WriteString(" \\\n--use-max-pods false")
	}
	fmt.Fprintf(&b, " \\\n--kubelet-extra-args %s", shellQuote(strings.Join(o.kubeletArgs(), " ")))
	if o.raid0() {
		b.WriteString(" \\\n--local-disks raid0")
	}
	b.WriteString("\n")
	return b.String()
}

func isIPv6(ip string) bool {
	addr, err := netip.ParseAddr(ip)
	return err == nil && addr.Is6()
}

// shellQuote single-quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// customPartsAL2 turns the node class's userData into MIME parts as upstream does: a MIME document gives its
// parts, anything else is a shell script.
func customPartsAL2(userData string) ([]part, error) {
	if userData == "" {
		return nil, nil
	}
	if isMIME(userData) {
		return readParts(userData)
	}
	return []part{{ContentType: contentTypeShell, Content: userData}}, nil
}

// parseAL2 reads user data as an AL2 node does: cloud-init runs the shell parts (or the whole document
// when it is not MIME), and the node joins through the last call to /etc/eks/bootstrap.sh.
func parseAL2(doc string) (Node, error) {
	scripts := []string{doc}
	if isMIME(doc) {
		parts, err := readParts(doc)
		if err != nil {
			return Node{}, fmt.Errorf("reading AL2 user data, %w", err)
		}
		scripts = nil
		for _, p := range parts {
			if mediaType(p.ContentType) == "text/x-shellscript" {
				scripts = append(scripts, p.Content)
			}
		}
	}
	var call []string
	var n Node
	for i, script := range scripts {
		commands, err := shellCommands(script)
		if err != nil {
			return Node{}, fmt.Errorf("reading AL2 user data, shell script %d, %w", i+1, err)
		}
		found := false
		for _, words := range commands {
			if path.Base(words[0]) == path.Base(bootstrapScript) {
				call, found = words, true
			}
		}
		if !found {
			n.Scripts = append(n.Scripts, script)
		}
	}
	if call == nil {
		return Node{}, fmt.Errorf("reading AL2 user data, no call to %s (the node would not join)", bootstrapScript)
	}
	if err := readBootstrapCall(&n, call[1:]); err != nil {
		return Node{}, fmt.Errorf("reading AL2 user data, %w", err)
	}
	return n, nil
}

// readBootstrapCall reads bootstrap.sh's arguments: the cluster name and flags that each take a value.
func readBootstrapCall(n *Node, args []string) error {
	var serviceCIDR string
	for i := 0; i < len(args); i++ {
		if !strings.HasPrefix(args[i], "--") {
			if n.ClusterName != "" {
				return fmt.Errorf("%s: unexpected argument %q", bootstrapScript, args[i])
			}
			n.ClusterName = args[i]
			continue
		}
		name, value, found := strings.Cut(args[i], "=")
		if !found {
			if i+1 >= len(args) {
				return fmt.Errorf("%s: flag %s has no value", bootstrapScript, name)
			}
			i++
			value = args[i]
		}
		switch name {
		case "--apiserver-endpoint":
			n.ClusterEndpoint = value
		case "--b64-cluster-ca":
			n.ClusterCABundle = value
		case "--dns-cluster-ip":
			n.ClusterDNS = []string{value}
		case "--local-disks":
			n.InstanceStoreRAID0 = value == "raid0"
		case "--service-ipv4-cidr":
			serviceCIDR = value
		case "--kubelet-extra-args":
			commands, err := shellCommands(value)
			if err != nil {
				return fmt.Errorf("reading --kubelet-extra-args, %w", err)
			}
			for _, words := range commands {
				if err := readKubeletArgs(n, words); err != nil {
					return fmt.Errorf("reading --kubelet-extra-args, %w", err)
				}
			}
		}
	}
	if n.ClusterName == "" {
		return fmt.Errorf("%s is called without a cluster name", bootstrapScript)
	}
	if len(n.ClusterDNS) == 0 && serviceCIDR != "" {
		dns, err := dnsFromCIDR(serviceCIDR)
		if err != nil {
			return err
		}
		n.ClusterDNS = []string{dns}
	}
	return nil
}
