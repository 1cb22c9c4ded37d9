package deps
import (
	_ "sigs.k8s.io/controller-runtime"
	_ "sigs.k8s.io/controller-runtime/pkg/envtest"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/client-go/kubernetes"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/onsi/ginkgo/v2"
	_ "github.com/onsi/gomega"
	_ "go.uber.org/zap"
	_ "sigs.k8s.io/yaml"
	_ "github.com/robfig/cron/v3"
)
