package v1

// SubnetSelectorTerm selects subnets by tags or by id. Within a term the fields are ANDed.
type SubnetSelectorTerm struct {
	// Tags select subnets carrying all of them; the value "*" matches any value.
	// +kubebuilder:validation:XValidation:message="empty tag keys or values aren't supported",rule="self.all(k, k != '' && self[k] != '')"
	// +kubebuilder:validation:MaxProperties:=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID of a subnet.
	// +kubebuilder:validation:Pattern="subnet-[0-9a-z]+"
	// +optional
	ID string `json:"id,omitempty"`
}

// SecurityGroupSelectorTerm selects security groups by tags, id or name. Within a term the fields are ANDed.
type SecurityGroupSelectorTerm struct {
	// Tags select security groups carrying all of them; the value "*" matches any value.
	// +kubebuilder:validation:XValidation:message="empty tag keys or values aren't supported",rule="self.all(k, k != '' && self[k] != '')"
	// +kubebuilder:validation:MaxProperties:=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID of a security group.
	// +kubebuilder:validation:Pattern:="sg-[0-9a-z]+"
	// +optional
	ID string `json:"id,omitempty"`
	// Name of a security group (its group name, not its Name tag).
	// +optional
	Name string `json:"name,omitempty"`
}

// CapacityReservationSelectorTerm selects capacity reservations by tags, owner and match criteria, or by id.
type CapacityReservationSelectorTerm struct {
	// Tags select reservations carrying all of them; the value "*" matches any value.
	// +kubebuilder:validation:XValidation:message="empty tag keys or values aren't supported",rule="self.all(k, k != '' && self[k] != '')"
	// +kubebuilder:validation:MaxProperties:=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID of a capacity reservation.
	// +kubebuilder:validation:Pattern:="^cr-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
	// OwnerID is the account that owns the reservation.
	// +kubebuilder:validation:Pattern:="^[0-9]{12}$"
	// +optional
	OwnerID string `json:"ownerID,omitempty"`
	// InstanceMatchCriteria selects open or targeted reservations.
	// +kubebuilder:validation:Enum:={open,targeted}
	// +optional
	InstanceMatchCriteria string `json:"instanceMatchCriteria,omitempty"`
}

// PlacementGroupSelector selects one placement group by name or by id.
// +kubebuilder:validation:XValidation:message="expected at least one, got none, ['name', 'id']",rule="has(self.name) || has(self.id)"
// +kubebuilder:validation:XValidation:message="'name' and 'id' are mutually exclusive",rule="!(has(self.name) && has(self.id))"
type PlacementGroupSelector struct {
	// Name of a placement group.
	// +kubebuilder:validation:MinLength:=1
	// +optional
	Name string `json:"name,omitempty"`
	// ID of a placement group.
	// +kubebuilder:validation:Pattern:="^pg-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
}

// AMISelectorTerm selects images by alias, id, name and owner, tags, or an SSM parameter. Within a term the
// fields are ANDed.
type AMISelectorTerm struct {
	// Alias selects an EKS-optimized AMI as "family@version": family is al2, al2023, bottlerocket, windows2019,
	// windows2022 or windows2025; version is a release (al2023@v20240703, bottlerocket@v1.20.4) or "latest".
	// Windows families only take "latest".
	// +kubebuilder:validation:XValidation:message="'alias' is improperly formatted, must match the format 'family@version'",rule="self.matches('^[a-zA-Z0-9]+@.+$')"
	// +kubebuilder:validation:XValidation:message="family is not supported, must be one of the following: 'al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'",rule="self.split('@')[0] in ['al2','al2023','bottlerocket','windows2019','windows2022','windows2025']"
	// +kubebuilder:validation:XValidation:message="windows families may only specify version 'latest'",rule="self.split('@')[0] in ['windows2019','windows2022','windows2025'] ? self.split('@')[1] == 'latest' : true"
	// +kubebuilder:validation:MaxLength=30
	// +optional
	Alias string `json:"alias,omitempty"`
	// Tags select images carrying all of them; the value "*" matches any value.
	// +kubebuilder:validation:XValidation:message="empty tag keys or values aren't supported",rule="self.all(k, k != '' && self[k] != '')"
	// +kubebuilder:validation:MaxProperties:=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID of an image.
	// +kubebuilder:validation:Pattern:="ami-[0-9a-z]+"
	// +optional
	ID string `json:"id,omitempty"`
	// Name of an image (its image name, not its Name tag); wildcards allowed.
	// +optional
	Name string `json:"name,omitempty"`
	// Owner of the image: an account ID, "self", "amazon" or "aws-marketplace".
	// +optional
	Owner string `json:"owner,omitempty"`
	// SSMParameter is the name or ARN of an SSM parameter that holds an image ID.
	// +optional
	SSMParameter string `json:"ssmParameter,omitempty"`
}
