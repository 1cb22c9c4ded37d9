package v1

// NetworkInterface places one network interface on an instance.
type NetworkInterface struct {
	// NetworkCardIndex is the network card the interface is attached to.
	// +kubebuilder:validation:Minimum:=0
	// +required
	NetworkCardIndex int32 `json:"networkCardIndex"`
	// DeviceIndex is the interface's position on its card.
	// +kubebuilder:validation:Minimum:=0
	// +required
	DeviceIndex int32 `json:"deviceIndex"`
	// InterfaceType is "interface" (ENA, with IP addresses) or "efa-only" (EFA traffic only).
	// +kubebuilder:validation:Enum:={interface,efa-only}
	// +required
	InterfaceType string `json:"interfaceType"`
}

// ConnectionTracking sets idle timeouts of tracked connections, in seconds. At least one must be set.
// +kubebuilder:validation:XValidation:message="at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set",rule="has(self.tcpEstablishedTimeout) || has(self.udpStreamTimeout) || has(self.udpTimeout)"
type ConnectionTracking struct {
	// TCPEstablishedTimeout is the idle timeout of established TCP connections, 60 to 432000 seconds.
	// +kubebuilder:validation:Minimum:=60
	// +kubebuilder:validation:Maximum:=432000
	// +optional
	TCPEstablishedTimeout *int32 `json:"tcpEstablishedTimeout,omitempty"`
	// UDPStreamTimeout is the idle timeout of UDP flows seen in both directions, 60 to 180 seconds.
	// +kubebuilder:validation:Minimum:=60
	// +kubebuilder:validation:Maximum:=180
	// +optional
	UDPStreamTimeout *int32 `json:"udpStreamTimeout,omitempty"`
	// UDPTimeout is the idle timeout of UDP flows seen in one direction or for one request-response, 30 to 60
	// seconds.
	// +kubebuilder:validation:Minimum:=30
	// +kubebuilder:validation:Maximum:=60
	// +optional
	UDPTimeout *int32 `json:"udpTimeout,omitempty"`
}

// CPUOptions configure the instances' processors.
type CPUOptions struct {
	// NestedVirtualization enables or disables nested virtualization.
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	NestedVirtualization *string `json:"nestedVirtualization,omitempty"`
}
