package nomination_test

import (
	"testing"

	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
	"github.com/lathe-autoscaler/lathe/pkg/test/suite"
)

var env *environment.Environment

var _ = suite.WithEnvironment(&env)

func TestNomination(t *testing.T) { suite.Run(t, "Nomination") }
