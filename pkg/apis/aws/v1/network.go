package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// NetworkInterface places one network interface on an instance.
type NetworkInterface struct {
	// NetworkCardIndex is the network card the interface is attached to.
	// +kubebuilder:validation:Minimum:=0
	// +kubebuilder:validation:Maximum:=15
	// +required
	NetworkCardIndex int32 `json:"networkCardIndex"`
	// DeviceIndex is the interface's position on its card.
	// +kubebuilder:validation:Minimum:=0
	// +kubebuilder:validation:Maximum:=31
	// +required
	DeviceIndex int32 `json:"deviceIndex"`
	// InterfaceType is "interface" (ENA, with IP addresses; the default) or "efa-only" (EFA traffic only).
	// +kubebuilder:validation:Enum:={interface,efa-only}
	// +kubebuilder:default=interface
	// +optional
	InterfaceType string `json:"interfaceType,omitempty"`
}

// ConnectionTracking sets idle timeouts of tracked connections.
type ConnectionTracking struct {
	// TCPEstablishedTimeout is the idle timeout of established TCP connections (60s to 432000s).
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type="string"
	// +optional
	TCPEstablishedTimeout *metav1.Duration `json:"tcpEstablishedTimeout,omitempty"`
	// UDPStreamTimeout is the idle timeout of UDP flows seen in both directions (60s to 180s).
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type="string"
	// +optional
	UDPStreamTimeout *metav1.Duration `json:"udpStreamTimeout,omitempty"`
	// UDPTimeout is the idle timeout of UDP flows seen in one direction or for one request-response (30s to 60s).
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type="string"
	// +optional
	UDPTimeout *metav1.Duration `json:"udpTimeout,omitempty"`
}

// CPUOptions configure the instances' processors.
type CPUOptions struct {
	// NestedVirtualization enables or disables nested virtualization.
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	NestedVirtualization *string `json:"nestedVirtualization,omitempty"`
}
