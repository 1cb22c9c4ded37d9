package fakeaws

import (
	"fmt"
	"strings"
	"time"
)

// iamState is the account's IAM roles and instance profiles, by name.
type iamState struct {
	roles    map[string]*role
	profiles map[string]*InstanceProfile
	next     int
}

type role struct {
	name, id string
	created  time.Time
}

// InstanceProfile is an IAM instance profile of the fake account.
type InstanceProfile struct {
	Name    string
	ID      string
	Path    string
	Roles   []string
	Tags    map[string]string
	Created time.Time
}

func init() {
	seeders = append(seeders, func(s *Server) {
		s.state.iam = iamState{roles: map[string]*role{}, profiles: map[string]*InstanceProfile{}}
	})
	handleIAM("GetInstanceProfile", (*Server).getInstanceProfile)
	handleIAM("CreateInstanceProfile", (*Server).createInstanceProfile)
	handleIAM("TagInstanceProfile", (*Server).tagInstanceProfile)
	handleIAM("AddRoleToInstanceProfile", (*Server).addRoleToInstanceProfile)
	handleIAM("RemoveRoleFromInstanceProfile", (*Server).removeRoleFromInstanceProfile)
	handleIAM("DeleteInstanceProfile", (*Server).deleteInstanceProfile)
	handleIAM("ListInstanceProfiles", (*Server).listInstanceProfiles)
}

func (st *iamState) newID(prefix string) string {
	st.next++
	return fmt.Sprintf("%s%017X", prefix, st.next)
}

// AddRole creates an IAM role (a no-op when it exists).
func (s *Server) AddRole(name string) {
	s.withState(func(st *state) {
		if _, ok := st.iam.roles[name]; !ok {
			st.iam.roles[name] = &role{name: name, id: st.iam.newID("AROA"), created: s.opts.Clock.Now()}
		}
	})
}

// InstanceProfiles lists the account's instance profiles.
func (s *Server) InstanceProfiles() []InstanceProfile {
	var out []InstanceProfile
	s.withState(func(st *state) {
		for _, name := range sortedKeys(st.iam.profiles) {
			p := *st.iam.profiles[name]
			p.Roles, p.Tags = append([]string(nil), p.Roles...), copyTags(p.Tags)
			out = append(out, p)
		}
	})
	return out
}

type iamTag struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

type iamRole struct {
	Path       string `xml:"Path"`
	RoleName   string `xml:"RoleName"`
	RoleID     string `xml:"RoleId"`
	Arn        string `xml:"Arn"`
	CreateDate string `xml:"CreateDate"`
}

type iamInstanceProfile struct {
	Path                string    `xml:"Path"`
	InstanceProfileName string    `xml:"InstanceProfileName"`
	InstanceProfileID   string    `xml:"InstanceProfileId"`
	Arn                 string    `xml:"Arn"`
	CreateDate          string    `xml:"CreateDate"`
	Roles               []iamRole `xml:"Roles>member"`
	Tags                []iamTag  `xml:"Tags>member"`
}

func iamTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func (st *iamState) profileItem(p *InstanceProfile) iamInstanceProfile {
	out := iamInstanceProfile{
		Path: p.Path, InstanceProfileName: p.Name, InstanceProfileID: p.ID, CreateDate: iamTime(p.Created),
		Arn: "arn:aws:iam::" + Account + ":instance-profile" + p.Path + p.Name, Roles: []iamRole{},
	}
	for _, name := range p.Roles {
		r := st.roles[name]
		item := iamRole{Path: "/", RoleName: name, Arn: "arn:aws:iam::" + Account + ":role/" + name}
		if r != nil {
			item.RoleID, item.CreateDate = r.id, iamTime(r.created)
		}
		out.Roles = append(out.Roles, item)
	}
	for _, k := range sortedKeys(p.Tags) {
		out.Tags = append(out.Tags, iamTag{Key: k, Value: p.Tags[k]})
	}
	return out
}

func noSuchProfile(name string) error {
	return notFoundf("NoSuchEntity", "Instance Profile %s cannot be found.", name)
}

type instanceProfileResponse struct {
	InstanceProfile iamInstanceProfile `xml:"InstanceProfile"`
}

func (s *Server) getInstanceProfile(q query) (any, error) {
	name := q["InstanceProfileName"]
	var (
		out instanceProfileResponse
		err error
	)
	s.withState(func(st *state) {
		p, ok := st.iam.profiles[name]
		if !ok {
			err = noSuchProfile(name)
			return
		}
		out.InstanceProfile = st.iam.profileItem(p)
	})
	return out, err
}

func iamTagsOf(q query) map[string]string {
	tags := map[string]string{}
	for _, t := range q.List("Tags.member") {
		tags[t["Key"]] = t["Value"]
	}
	return tags
}

func (s *Server) createInstanceProfile(q query) (any, error) {
	name, path := q["InstanceProfileName"], q["Path"]
	if path == "" {
		path = "/"
	}
	if name == "" || len(name) > 128 {
		return nil, errorf("ValidationError", "1 validation error detected: Value at 'instanceProfileName' failed to satisfy constraint")
	}
	if !strings.HasPrefix(path, "/") || !strings.HasSuffix(path, "/") {
		return nil, errorf("ValidationError", "The specified value for path is invalid. It must begin and end with / and contain only alphanumeric characters and/or / characters.")
	}
	var (
		out instanceProfileResponse
		err error
	)
	s.withState(func(st *state) {
		if _, ok := st.iam.profiles[name]; ok {
			err = &apiError{Code: "EntityAlreadyExists", Message: "Instance Profile " + name + " already exists.", Status: 409}
			return
		}
		p := &InstanceProfile{Name: name, ID: st.iam.newID("AIPA"), Path: path, Tags: iamTagsOf(q), Created: s.opts.Clock.Now()}
		st.iam.profiles[name] = p
		out.InstanceProfile = st.iam.profileItem(p)
	})
	return out, err
}

// withProfile runs f on the named profile, or answers NoSuchEntity.
func (s *Server) withProfile(name string, f func(st *iamState, p *InstanceProfile) error) error {
	var err error
	s.withState(func(st *state) {
		p, ok := st.iam.profiles[name]
		if !ok {
			err = noSuchProfile(name)
			return
		}
		err = f(&st.iam, p)
	})
	return err
}

func (s *Server) tagInstanceProfile(q query) (any, error) {
	return nil, s.withProfile(q["InstanceProfileName"], func(_ *iamState, p *InstanceProfile) error {
		for k, v := range iamTagsOf(q) {
			p.Tags[k] = v
		}
		return nil
	})
}

func (s *Server) addRoleToInstanceProfile(q query) (any, error) {
	roleName := q["RoleName"]
	return nil, s.withProfile(q["InstanceProfileName"], func(st *iamState, p *InstanceProfile) error {
		if _, ok := st.roles[roleName]; !ok {
			return notFoundf("NoSuchEntity", "The role with name %s cannot be found.", roleName)
		}
		if len(p.Roles) > 0 {
			return &apiError{Code: "LimitExceeded", Message: "Cannot exceed quota for InstanceSessionsPerInstanceProfile: 1", Status: 409}
		}
		p.Roles = []string{roleName}
		return nil
	})
}

func (s *Server) removeRoleFromInstanceProfile(q query) (any, error) {
	roleName := q["RoleName"]
	return nil, s.withProfile(q["InstanceProfileName"], func(_ *iamState, p *InstanceProfile) error {
		if !contains(p.Roles, roleName) {
			return notFoundf("NoSuchEntity", "The role with name %s cannot be found.", roleName)
		}
		p.Roles = nil
		return nil
	})
}

func (s *Server) deleteInstanceProfile(q query) (any, error) {
	name := q["InstanceProfileName"]
	return nil, s.withProfile(name, func(st *iamState, p *InstanceProfile) error {
		if len(p.Roles) > 0 {
			return &apiError{Code: "DeleteConflict", Message: "Cannot delete entity, must remove roles from instance profile first.", Status: 409}
		}
		delete(st.profiles, name)
		return nil
	})
}

type listInstanceProfilesResponse struct {
	InstanceProfiles []iamInstanceProfile `xml:"InstanceProfiles>member"`
	IsTruncated      bool                 `xml:"IsTruncated"`
	Marker           string               `xml:"Marker,omitempty"`
}

func (s *Server) listInstanceProfiles(q query) (any, error) {
	prefix := q["PathPrefix"]
	if prefix == "" {
		prefix = "/"
	}
	var all []iamInstanceProfile
	s.withState(func(st *state) {
		for _, name := range sortedKeys(st.iam.profiles) {
			if p := st.iam.profiles[name]; strings.HasPrefix(p.Path, prefix) {
				all = append(all, st.iam.profileItem(p))
			}
		}
	})
	paging := query{"NextToken": q["Marker"], "MaxResults": q["MaxItems"]}
	if paging["MaxResults"] == "" {
		delete(paging, "MaxResults")
	}
	start, end, next, err := page(paging, len(all), 100)
	if err != nil {
		return nil, err
	}
	return listInstanceProfilesResponse{InstanceProfiles: all[start:end], IsTruncated: next != "", Marker: next}, nil
}
