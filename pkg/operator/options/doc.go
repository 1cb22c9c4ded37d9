// Package options holds Lathe's process settings and parses them from command-line flags and environment
// variables.
//
// Every setting has an environment variable, named as Karpenter names it (CLUSTER_NAME, BATCH_MAX_DURATION,
// ...), and a flag that is the same name in lower kebab case (--cluster-name, --batch-max-duration). The order of
// precedence is: flag, then environment variable, then the built-in default. An environment variable that is set
// to the empty string counts as unset. Usage prints the full table.
//
// Parse never reads the process environment itself; it takes the arguments and a getenv function, so tests run
// without touching os.Environ:
//
//	opts, err := options.Parse(os.Args[1:], os.Getenv)
//
// Every invalid value is reported with the variable or flag that carried it and the value itself. All invalid
// environment variables are reported together; flag errors stop at the first bad flag.
//
// Options is a plain value. It is built once in main and passed to constructors; it is never stored in a
// context.Context.
package options
