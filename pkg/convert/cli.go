package convert

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// fileList is a repeatable -f flag.
type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

// Run is karpenter-convert: it reads the files named by -f (repeatable; "-" is standard input; a directory
// means its .yaml, .yml and .json files), converts every document, and writes the result to stdout as one
// multi-document YAML stream. Notes go to stderr. On any problem it writes nothing to stdout, lists every
// problem on stderr and returns a non-zero exit code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("karpenter-convert", flag.ContinueOnError)
	flags.SetOutput(stderr)
	var files fileList
	var opts Options
	flags.Var(&files, "f", "file, directory (its .yaml, .yml and .json files) or - for stdin to convert; repeatable")
	flags.Var(&files, "filename", "same as -f")
	flags.BoolVar(&opts.IgnoreDefaults, "ignore-defaults", false, "do not add the requirements Karpenter's v1alpha5 webhook defaulted on Provisioners (linux, amd64, on-demand, c/m/r instance categories of generation > 2)")
	flags.Usage = func() {
		fmt.Fprintf(stderr, "Usage: karpenter-convert -f FILE [-f FILE ...] [--ignore-defaults] > converted.yaml\n\n"+
			"Converts Karpenter v1alpha5 Provisioners, v1alpha1 AWSNodeTemplates, v1beta1 NodePools and v1beta1\n"+
			"EC2NodeClasses into karpenter.sh/v1 NodePools and karpenter.k8s.aws/v1 EC2NodeClasses.\n\n")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(stderr, "error: unexpected arguments %q: name inputs with -f\n", flags.Args())
		return 2
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "error: must specify -f (a file, a directory, or - for stdin)")
		return 2
	}
	docs, err := readInputs(files, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	result, err := Convert(docs, opts)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	out, err := result.YAML()
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	_ = result.WriteNotes(stderr)
	if _, err := stdout.Write(out); err != nil {
		fmt.Fprintf(stderr, "error: writing output, %v\n", err)
		return 1
	}
	return 0
}

// readInputs reads every document of every input, in order.
func readInputs(names []string, stdin io.Reader) ([]*Document, error) {
	var docs []*Document
	for _, name := range names {
		paths, err := expand(name)
		if err != nil {
			return nil, err
		}
		for _, p := range paths {
			d, err := readInput(p, stdin)
			if err != nil {
				return nil, err
			}
			docs = append(docs, d...)
		}
	}
	return docs, nil
}

func readInput(name string, stdin io.Reader) ([]*Document, error) {
	if name == "-" {
		return ReadDocuments("<stdin>", stdin)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("opening %s, %w", name, err)
	}
	defer f.Close()
	return ReadDocuments(name, f)
}

// expand turns a directory into its manifest files, sorted; anything else stands for itself.
func expand(name string) ([]string, error) {
	if name == "-" {
		return []string{name}, nil
	}
	info, err := os.Stat(name)
	if err != nil {
		return nil, fmt.Errorf("reading %s, %w", name, err)
	}
	if !info.IsDir() {
		return []string{name}, nil
	}
	entries, err := os.ReadDir(name)
	if err != nil {
		return nil, fmt.Errorf("reading %s, %w", name, err)
	}
	var out []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				out = append(out, filepath.Join(name, e.Name()))
			}
		}
	}
	sort.Strings(out)
	return out, nil
}
