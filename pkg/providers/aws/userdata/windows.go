package userdata

import (
	"fmt"
	"strings"
)

const windowsBootstrapScript = `Start-EKSBootstrap.ps1`

// renderWindows writes a <powershell> block: the node class's userData, then the EKS bootstrap call.
func renderWindows(o Options) string {
	var b strings.Builder
	b.WriteString("<powershell>\n")
	if custom := derefString(o.CustomUserData); custom != "" {
		b.WriteString(custom + "\n")
	}
	b.WriteString(`[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\Amazon\EKS\` + windowsBootstrapScript + "\"\n")
	fmt.Fprintf(&b, "& $EKSBootstrapScriptFile -EKSClusterName %s -APIServerEndpoint %s", psQuote(o.ClusterName), psQuote(o.ClusterEndpoint))
	if o.ClusterCABundle != "" {
		fmt.Fprintf(&b, " -Base64ClusterCA %s", psQuote(o.ClusterCABundle))
	}
	fmt.Fprintf(&b, " -KubeletExtraArgs %s", psQuote(strings.Join(o.kubeletArgs(), " ")))
	if dns := o.clusterDNS(); len(dns) > 0 {
		fmt.Fprintf(&b, " -DNSClusterIP %s", psQuote(dns[0]))
	}
	b.WriteString("\n</powershell>")
	return b.String()
}

// psQuote single-quotes s for PowerShell.
func psQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// parseWindows reads user data as EC2Launch and the EKS bootstrap script do: the <powershell> block runs,
// and the node joins through its call to the bootstrap script (the last one).
func parseWindows(doc string) (Node, error) {
	start := strings.Index(doc, "<powershell>")
	end := strings.LastIndex(doc, "</powershell>")
	if start < 0 || end < start {
		return Node{}, fmt.Errorf("reading Windows user data, no <powershell>...</powershell> block")
	}
	var call []string
	for _, line := range strings.Split(doc[start+len("<powershell>"):end], "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "&") {
			continue
		}
		words, err := powershellWords(strings.TrimSpace(strings.TrimPrefix(line, "&")))
		if err != nil {
			return Node{}, fmt.Errorf("reading Windows user data, %w", err)
		}
		if len(words) > 0 && (words[0] == "$EKSBootstrapScriptFile" || strings.HasSuffix(words[0], windowsBootstrapScript)) {
			call = words[1:]
		}
	}
	if call == nil {
		return Node{}, fmt.Errorf("reading Windows user data, no call to %s (the node would not join)", windowsBootstrapScript)
	}
	var n Node
	if err := readWindowsCall(&n, call); err != nil {
		return Node{}, fmt.Errorf("reading Windows user data, %w", err)
	}
	return n, nil
}

func readWindowsCall(n *Node, args []string) error {
	for i := 0; i < len(args); i++ {
		name := args[i]
		if !strings.HasPrefix(name, "-") {
			return fmt.Errorf("%s: unexpected argument %q", windowsBootstrapScript, name)
		}
		if i+1 >= len(args) {
			return fmt.Errorf("%s: parameter %s has no value", windowsBootstrapScript, name)
		}
		i++
		value := args[i]
		// PowerShell parameter names are case-insensitive.
		switch strings.ToLower(name) {
		case "-eksclustername":
			n.ClusterName = value
		case "-apiserverendpoint":
			n.ClusterEndpoint = value
		case "-base64clusterca":
			n.ClusterCABundle = value
		case "-dnsclusterip":
			n.ClusterDNS = []string{value}
		case "-kubeletextraargs":
			commands, err := shellCommands(value)
			if err != nil {
				return fmt.Errorf("reading -KubeletExtraArgs, %w", err)
			}
			for _, words := range commands {
				if err := readKubeletArgs(n, words); err != nil {
					return fmt.Errorf("reading -KubeletExtraArgs, %w", err)
				}
			}
		}
	}
	if n.ClusterName == "" {
		return fmt.Errorf("%s is called without -EKSClusterName", windowsBootstrapScript)
	}
	return nil
}
