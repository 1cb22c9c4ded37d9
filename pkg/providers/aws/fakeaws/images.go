package fakeaws

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"
)

// imageState is the region's AMIs by ID and its SSM parameters by name.
type imageState struct {
	images     map[string]*Image
	parameters map[string]parameter
}

type parameter struct {
	value    string
	dataType string
	version  int
	modified time.Time
}

// Image is an AMI of the fake region.
type Image struct {
	// ID is derived from the name by AddImage when empty.
	ID   string
	Name string
	// Architecture is x86_64 or arm64 (default x86_64).
	Architecture string
	CreationDate time.Time
	// DeprecationTime, when set, is when the image becomes deprecated.
	DeprecationTime *time.Time
	// State is available unless set.
	State string
	// OwnerID defaults to the fake's account; OwnerAlias is "amazon" for Amazon's public images.
	OwnerID    string
	OwnerAlias string
	// Platform is "windows" for Windows images, "" otherwise.
	Platform       string
	RootDeviceName string
	BlockDevices   []ImageBlockDevice
	Tags           map[string]string
}

// ImageBlockDevice is a block device mapping of an image.
type ImageBlockDevice struct {
	DeviceName string
	SnapshotID string
	VolumeSize int
	VolumeType string
}

// Owners of the EKS-optimized images, as EC2 reports them.
const (
	eksImageOwner          = "602401143452"
	bottlerocketImageOwner = "092701018921"
	windowsImageOwner      = "801119661308"
)

// SeededKubernetesVersions are the Kubernetes minor versions the fake publishes EKS-optimized images for.
var SeededKubernetesVersions = []string{"1.30", "1.31", "1.32", "1.33", "1.34", "1.35", "1.36", "1.37"}

// AL2023Releases and AL2Releases are the EKS-optimized AMI releases the fake publishes per Kubernetes
// version, oldest first; the last is "recommended" (what @latest resolves to).
var (
	AL2023Releases       = []string{"v20240807", "v20250301", "v20251120"}
	AL2Releases          = []string{"v20240807", "v20250301"}
	BottlerocketReleases = []string{"1.20.4", "1.50.0"}
)

func init() {
	seeders = append(seeders, func(s *Server) {
		s.state.images = imageState{images: map[string]*Image{}, parameters: map[string]parameter{}}
		for _, v := range SeededKubernetesVersions {
			s.SeedEKSOptimizedImages(v)
		}
	})
	handleEC2("DescribeImages", (*Server).describeImages)
	handleJSON("AmazonSSM.GetParameter", (*Server).getParameter)
	handleJSON("AmazonSSM.GetParameters", (*Server).getParameters)
}

// imageID derives a stable AMI ID from an image name.
func imageID(name string) string {
	h := fnv.New64a()
	h.Write([]byte(name))
	return fmt.Sprintf("ami-%017x", h.Sum64())
}

// AddImage adds an image (ID from its name when empty) and returns it as stored.
func (s *Server) AddImage(img Image) Image {
	if img.ID == "" {
		img.ID = imageID(img.Name)
	}
	if img.Architecture == "" {
		img.Architecture = "x86_64"
	}
	if img.State == "" {
		img.State = "available"
	}
	if img.OwnerID == "" {
		img.OwnerID = Account
	}
	if img.RootDeviceName == "" {
		img.RootDeviceName = "/dev/xvda"
	}
	if len(img.BlockDevices) == 0 {
		img.BlockDevices = []ImageBlockDevice{{DeviceName: img.RootDeviceName, VolumeSize: 20, VolumeType: "gp3"}}
	}
	for i := range img.BlockDevices {
		if img.BlockDevices[i].SnapshotID == "" {
			img.BlockDevices[i].SnapshotID = "snap-" + strings.TrimPrefix(imageID(img.Name+img.BlockDevices[i].DeviceName), "ami-")
		}
	}
	img.Tags = copyTags(img.Tags)
	s.withState(func(st *state) { st.images.images[img.ID] = &img })
	return img
}

// ImageByID returns an image of the region.
func (s *Server) ImageByID(id string) (Image, bool) {
	var (
		out Image
		ok  bool
	)
	s.withState(func(st *state) {
		var img *Image
		if img, ok = st.images.images[id]; ok {
			out = *img
		}
	})
	return out, ok
}

// SetImageDeprecation sets (or clears, with nil) an image's deprecation time.
func (s *Server) SetImageDeprecation(id string, at *time.Time) {
	s.withState(func(st *state) {
		if img, ok := st.images.images[id]; ok {
			img.DeprecationTime = at
		}
	})
}

// SetParameter creates or overwrites an SSM parameter (a new version each time).
func (s *Server) SetParameter(name, value string) {
	s.setParameter(name, value, "text")
}

func (s *Server) setParameter(name, value, dataType string) {
	s.withState(func(st *state) {
		p := st.images.parameters[name]
		st.images.parameters[name] = parameter{value: value, dataType: dataType, version: p.version + 1, modified: s.opts.Clock.Now()}
	})
}

// Parameter returns an SSM parameter's value.
func (s *Server) Parameter(name string) (string, bool) {
	var (
		p  parameter
		ok bool
	)
	s.withState(func(st *state) { p, ok = st.images.parameters[name] })
	return p.value, ok
}

// SeedEKSOptimizedImages publishes, for one Kubernetes version (for example "1.37"), the EKS-optimized
// images and the public SSM parameters that point at them, at the paths Karpenter's alias resolution reads:
// AL2023 (x86_64 standard, nvidia, neuron; arm64 standard, nvidia) per release and "recommended", AL2
// (before 1.33, as EKS stopped publishing it), Bottlerocket (x86_64, arm64 and their nvidia variants) per
// release and "latest", and Windows Server 2019, 2022 and 2025 Core (2025 from 1.35).
func (s *Server) SeedEKSOptimizedImages(k8s string) {
	for i, release := range AL2023Releases {
		latest := i == len(AL2023Releases)-1
		for _, av := range []struct{ arch, variant string }{{"x86_64", "standard"}, {"x86_64", "nvidia"}, {"x86_64", "neuron"}, {"arm64", "standard"}, {"arm64", "nvidia"}} {
			name := fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s", av.arch, av.variant, k8s, release)
			img := s.addReleaseImage(name, av.arch, release, eksImageOwner, "/dev/xvda", 20)
			base := fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/", k8s, av.arch, av.variant)
			s.setParameter(base+name+"/image_id", img.ID, "aws:ec2:image")
			if latest {
				s.setParameter(base+"recommended/image_id", img.ID, "aws:ec2:image")
			}
		}
	}
	if minor(k8s) < 33 {
		for i, release := range AL2Releases {
			latest := i == len(AL2Releases)-1
			for _, v := range []struct{ suffix, prefix, arch string }{{"", "amazon-eks-node", "x86_64"}, {"-arm64", "amazon-eks-arm64-node", "arm64"}, {"-gpu", "amazon-eks-gpu-node", "x86_64"}} {
				name := fmt.Sprintf("%s-%s-%s", v.prefix, k8s, release)
				img := s.addReleaseImage(name, v.arch, release, eksImageOwner, "/dev/xvda", 20)
				base := fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2%s/", k8s, v.suffix)
				s.setParameter(base+name+"/image_id", img.ID, "aws:ec2:image")
				if latest {
					s.setParameter(base+"recommended/image_id", img.ID, "aws:ec2:image")
				}
			}
		}
	}
	for i, release := range BottlerocketReleases {
		latest := i == len(BottlerocketReleases)-1
		for _, v := range []struct{ flavor, arch string }{{"", "x86_64"}, {"", "arm64"}, {"-nvidia", "x86_64"}, {"-nvidia", "arm64"}} {
			name := fmt.Sprintf("bottlerocket-aws-k8s-%s%s-%s-v%s", k8s, v.flavor, v.arch, release)
			img := s.addReleaseImage(name, v.arch, bottlerocketDate(i), bottlerocketImageOwner, "/dev/xvda", 2)
			base := fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s%s/%s/", k8s, v.flavor, v.arch)
			s.setParameter(base+release+"/image_id", img.ID, "aws:ec2:image")
			if latest {
				s.setParameter(base+"latest/image_id", img.ID, "aws:ec2:image")
			}
		}
	}
	for _, windows := range []string{"2019", "2022", "2025"} {
		if windows == "2025" && minor(k8s) < 35 {
			continue
		}
		base := fmt.Sprintf("Windows_Server-%s-English-Core-EKS_Optimized-%s", windows, k8s)
		img := s.addReleaseImage(base+"-2025.11.12", "x86_64", "v20251112", windowsImageOwner, "/dev/sda1", 50)
		s.setParameter("/aws/service/ami-windows-latest/"+base+"/image_id", img.ID, "aws:ec2:image")
	}
}

// addReleaseImage adds an Amazon-owned image released on the date a release name carries (vYYYYMMDD),
// deprecated two years later as EKS-optimized images are.
func (s *Server) addReleaseImage(name, arch, release, owner, root string, size int) Image {
	created, err := time.Parse("20060102", strings.TrimPrefix(release, "v"))
	if err != nil {
		created = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	deprecated := created.AddDate(2, 0, 0)
	img := Image{
		Name: name, Architecture: arch, CreationDate: created, DeprecationTime: &deprecated, OwnerID: owner,
		OwnerAlias: "amazon", RootDeviceName: root, BlockDevices: []ImageBlockDevice{{DeviceName: root, VolumeSize: size, VolumeType: "gp2"}},
	}
	if strings.HasPrefix(name, "Windows_Server") {
		img.Platform = "windows"
	}
	if strings.HasPrefix(name, "bottlerocket") {
		img.BlockDevices = append(img.BlockDevices, ImageBlockDevice{DeviceName: "/dev/xvdb", VolumeSize: 20, VolumeType: "gp2"})
	}
	return s.AddImage(img)
}

// bottlerocketDate is the release date of the i-th seeded Bottlerocket release.
func bottlerocketDate(i int) string {
	return []string{"v20240716", "v20251105"}[i]
}

func minor(k8s string) int {
	_, m, _ := strings.Cut(k8s, ".")
	n, _ := strconv.Atoi(m)
	return n
}

type imageBlockDeviceItem struct {
	DeviceName string `xml:"deviceName"`
	Ebs        struct {
		SnapshotID          string `xml:"snapshotId"`
		VolumeSize          int    `xml:"volumeSize"`
		DeleteOnTermination bool   `xml:"deleteOnTermination"`
		VolumeType          string `xml:"volumeType"`
		Encrypted           bool   `xml:"encrypted"`
	} `xml:"ebs"`
}

type imageItem struct {
	ImageID            string                 `xml:"imageId"`
	ImageLocation      string                 `xml:"imageLocation"`
	State              string                 `xml:"imageState"`
	OwnerID            string                 `xml:"imageOwnerId"`
	OwnerAlias         string                 `xml:"imageOwnerAlias,omitempty"`
	CreationDate       string                 `xml:"creationDate"`
	DeprecationTime    string                 `xml:"deprecationTime,omitempty"`
	IsPublic           bool                   `xml:"isPublic"`
	Architecture       string                 `xml:"architecture"`
	ImageType          string                 `xml:"imageType"`
	Platform           string                 `xml:"platform,omitempty"`
	PlatformDetails    string                 `xml:"platformDetails"`
	Name               string                 `xml:"name"`
	RootDeviceType     string                 `xml:"rootDeviceType"`
	RootDeviceName     string                 `xml:"rootDeviceName"`
	BlockDevices       []imageBlockDeviceItem `xml:"blockDeviceMapping>item"`
	VirtualizationType string                 `xml:"virtualizationType"`
	Hypervisor         string                 `xml:"hypervisor"`
	EnaSupport         bool                   `xml:"enaSupport"`
	Tags               []ec2Tag               `xml:"tagSet>item"`
}

type describeImagesResponse struct {
	Images    []imageItem `xml:"imagesSet>item"`
	NextToken string      `xml:"nextToken,omitempty"`
}

func (s *Server) describeImages(q query) (any, error) {
	filters, ids, owners := filtersOf(q), q.Strings("ImageId"), q.Strings("Owner")
	includeDeprecated := q["IncludeDeprecated"] == "true" || len(ids) > 0
	now := s.opts.Clock.Now()
	var (
		matched []imageItem
		missing string
	)
	s.withState(func(st *state) {
		missing = firstMissing(ids, st.images.images)
		for _, id := range sortedKeys(st.images.images) {
			img := st.images.images[id]
			deprecated := img.DeprecationTime != nil && !img.DeprecationTime.After(now)
			if (len(ids) > 0 && !contains(ids, id)) || (deprecated && !includeDeprecated) || !ownedBy(img, owners) {
				continue
			}
			if !matchFilters(filters, img.Tags, func(name string) []string {
				switch name {
				case "image-id":
					return []string{img.ID}
				case "name":
					return []string{img.Name}
				case "architecture":
					return []string{img.Architecture}
				case "state":
					return []string{img.State}
				case "owner-id":
					return []string{img.OwnerID}
				case "owner-alias":
					return []string{img.OwnerAlias}
				case "platform":
					return []string{img.Platform}
				case "is-public":
					return []string{strconv.FormatBool(img.OwnerAlias == "amazon")}
				}
				return nil
			}) {
				continue
			}
			matched = append(matched, imageItemOf(img))
		}
	})
	if missing != "" {
		return nil, errorf("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", missing)
	}
	start, end, next, err := page(q, len(matched), 1000)
	if err != nil {
		return nil, err
	}
	return describeImagesResponse{Images: matched[start:end], NextToken: next}, nil
}

// ownedBy reports whether an image belongs to one of the Owner.N values (account IDs, "self", "amazon",
// "aws-marketplace"); no owners means any.
func ownedBy(img *Image, owners []string) bool {
	if len(owners) == 0 {
		return true
	}
	for _, o := range owners {
		if o == img.OwnerID || (o == "self" && img.OwnerID == Account) || (o != "" && o == img.OwnerAlias) {
			return true
		}
	}
	return false
}

func imageItemOf(img *Image) imageItem {
	item := imageItem{
		ImageID: img.ID, ImageLocation: img.OwnerAlias + "/" + img.Name, State: img.State, OwnerID: img.OwnerID,
		OwnerAlias: img.OwnerAlias, CreationDate: img.CreationDate.UTC().Format("2006-01-02T15:04:05.000Z"),
		IsPublic: img.OwnerAlias == "amazon", Architecture: img.Architecture, ImageType: "machine", Platform: img.Platform,
		PlatformDetails: "Linux/UNIX", Name: img.Name, RootDeviceType: "ebs", RootDeviceName: img.RootDeviceName,
		VirtualizationType: "hvm", Hypervisor: "xen", EnaSupport: true, Tags: ec2Tags(img.Tags),
	}
	if img.Platform == "windows" {
		item.PlatformDetails = "Windows"
	}
	if img.DeprecationTime != nil {
		item.DeprecationTime = img.DeprecationTime.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	for _, bd := range img.BlockDevices {
		var b imageBlockDeviceItem
		b.DeviceName = bd.DeviceName
		b.Ebs.SnapshotID, b.Ebs.VolumeSize, b.Ebs.VolumeType, b.Ebs.DeleteOnTermination = bd.SnapshotID, bd.VolumeSize, bd.VolumeType, true
		item.BlockDevices = append(item.BlockDevices, b)
	}
	return item
}

type ssmParameter struct {
	Name             string  `json:"Name"`
	Type             string  `json:"Type"`
	Value            string  `json:"Value"`
	Version          int     `json:"Version"`
	LastModifiedDate float64 `json:"LastModifiedDate"`
	ARN              string  `json:"ARN"`
	DataType         string  `json:"DataType"`
}

func (s *Server) ssmParameterOf(name string, p parameter) ssmParameter {
	return ssmParameter{
		Name: name, Type: "String", Value: p.value, Version: p.version, DataType: p.dataType,
		LastModifiedDate: float64(p.modified.UnixMilli()) / 1000,
		ARN:              "arn:aws:ssm:" + s.opts.Region + "::parameter" + name,
	}
}

func (s *Server) getParameter(body []byte) (any, error) {
	var in struct{ Name string }
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	var (
		p  parameter
		ok bool
	)
	s.withState(func(st *state) { p, ok = st.images.parameters[in.Name] })
	if !ok {
		return nil, errorf("ParameterNotFound", "Parameter %s not found.", in.Name)
	}
	return map[string]ssmParameter{"Parameter": s.ssmParameterOf(in.Name, p)}, nil
}

func (s *Server) getParameters(body []byte) (any, error) {
	var in struct{ Names []string }
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	out := struct {
		Parameters        []ssmParameter
		InvalidParameters []string
	}{Parameters: []ssmParameter{}, InvalidParameters: []string{}}
	s.withState(func(st *state) {
		for _, name := range in.Names {
			if p, ok := st.images.parameters[name]; ok {
				out.Parameters = append(out.Parameters, s.ssmParameterOf(name, p))
			} else {
				out.InvalidParameters = append(out.InvalidParameters, name)
			}
		}
	})
	return out, nil
}
