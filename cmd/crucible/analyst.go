package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/crucible-sandbox/crucible/internal/nearest"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/server"
	"github.com/crucible-sandbox/crucible/service"
)

// analystFlags are the flags of `crucible analyst`.
type analystFlags struct {
	agentSetup
	data    []string
	out     string
	jsonOut bool
}

func newAnalystCommand() *cobra.Command {
	var f analystFlags
	cmd := &cobra.Command{
		Use: `analyst [flags] DATA... [QUESTION...]`,
		Example: `  # The profile of a file, no model needed
  crucible analyst sales.csv

  # Questions, answered in order in one session (follow-ups see earlier answers)
  crucible analyst --base-url http://localhost:11434/v1 --model qwen2.5-coder \
      sales.csv "What is the mean revenue per region?" "Plot it as a bar chart."

  # Clean a file: the cleaned CSV is saved in ./out, the summary printed
  # (without --out, nothing is written: the files are named, not saved)
  crucible analyst --out out people.csv "Normalise this CSV: trim whitespace, standardise dates, remove duplicates"

  # The whole transcript as JSON
  crucible analyst --json --data sales.xlsx "Which month had the most orders?"`,
		Short: "Profile datasets and let a model answer questions about them",
		Long: `Load datasets (CSV, TSV, Excel, JSON, JSON Lines) into a sandboxed Python
session, print their profile, and answer questions about them with the code
agent: a language model writes pandas code with the profile in front of it,
Crucible runs it where the DataFrames are loaded, the model fixes its errors,
a verifier checks the output answers the question.

Arguments that name existing files are datasets (--data FILE also); the
others are questions, answered in order in one session: a follow-up sees the
earlier questions, their answers and the variables their code defined. An
argument that looks like a file name (sales.csv) but names no file is an
error. With no question, the profile is printed and the command exits,
needing no model; when standard input is a terminal it reads questions
instead, one per line, until end of input (Ctrl-D), and a model is needed.

Each question is printed on standard output, then its answer: its status,
the code that produced it, its output, its tables and a summary of any
cleaning (rows in and out, duplicates removed, values changed per column,
date parse rate, a warning per value that failed to parse); the progress
goes to standard error. Its charts (PNG, with their titles) and the files
its code wrote (a cleaned CSV) are saved in the directory --out names under
cleaned names, never replacing a file (see crucible session --help); without
--out they are named but nothing is written. --json prints the transcript
instead: the profile and, for each question, its answer, code, output,
tables, cleaning summaries and the paths of its saved charts and files, as
one JSON object.

A question that asks for the answer in a format such as @mean_age[value]
gets it in that form: an answer without it is sent back to the model to
restate (once at no cost in attempts).

The model, the image, the records and the redaction of output are as for
crucible agent (see crucible agent --help): --provider, --base-url, --model,
--api-key or the environment; the data-science image when built. What the
data, the model and the programs wrote is shown on a terminal with escape
sequences as visible escapes, unless --raw-output.

Exit status: 0 when every question was answered (unverified answers count),
1 when some were not, 2 for bad flags or data, 70 when the platform failed.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAnalyst(cmd.Context(), &f, args, newDisplay(cmd))
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.data, "data", nil, "dataset `FILE` (repeatable), in addition to the arguments that name files")
	f.addFlags(fl, service.DefaultAnalysisLimits().MemoryBytes)
	fl.StringVar(&f.out, "out", "", "save the charts and files of the answers in `DIR` (default: none saved)")
	fl.BoolVar(&f.jsonOut, "json", false, "print the transcript as one JSON object")
	addRawOutputFlag(fl)
	return cmd
}

// dataExtensions are the extensions of the files an analysis reads: an
// argument with one that names no file is taken for a mistyped dataset,
// not a question.
var dataExtensions = map[string]bool{".csv": true, ".tsv": true, ".txt": true, ".xlsx": true, ".xlsm": true, ".json": true, ".jsonl": true, ".ndjson": true}

// splitAnalystArgs sorts the arguments into dataset paths (--data first,
// then the arguments naming regular files) and questions, in order.
func splitAnalystArgs(data, args []string) (paths, questions []string, err error) {
	paths = append(paths, data...)
	for _, arg := range args {
		st, serr := os.Stat(arg)
		switch {
		case serr == nil && st.Mode().IsRegular():
			paths = append(paths, arg)
		case serr == nil && st.IsDir():
			return nil, nil, fmt.Errorf("%s is a directory: give the dataset files", arg)
		case errors.Is(serr, fs.ErrNotExist) && !strings.ContainsAny(arg, " \t\n") && dataExtensions[strings.ToLower(filepath.Ext(arg))]:
			return nil, nil, fmt.Errorf("%s: no such file%s (a question would not look like a file name)", arg, nearest.Suggest(nearDataFiles(arg)))
		case strings.TrimSpace(arg) != "":
			questions = append(questions, arg)
		}
	}
	if len(paths) == 0 {
		return nil, nil, errors.New("no dataset: give at least one file (an argument or --data)")
	}
	return paths, questions, nil
}

// nearDataFiles returns the data files beside path, a file that does not
// exist, whose names are nearest its name (a misspelt dataset), written
// as path is (in its directory).
func nearDataFiles(path string) []string {
	dir := filepath.Dir(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && dataExtensions[strings.ToLower(filepath.Ext(e.Name()))] {
			names = append(names, e.Name())
		}
	}
	near := nearest.Names(filepath.Base(path), names, 3)
	if dir != "." {
		for i, n := range near {
			near[i] = filepath.Join(dir, n)
		}
	}
	return near
}

// readDatasets reads the files at paths as datasets named after them.
func readDatasets(paths []string) ([]service.Dataset, error) {
	datasets := make([]service.Dataset, 0, len(paths))
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if st.Size() > service.MaxDatasetBytes {
			return nil, fmt.Errorf("%s: %d bytes, over the %d an analysis reads", p, st.Size(), service.MaxDatasetBytes)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		datasets = append(datasets, service.Dataset{Name: filepath.Base(p), Content: b})
	}
	return datasets, nil
}

func runAnalyst(ctx context.Context, f *analystFlags, args []string, d *display) error {
	paths, questions, err := splitAnalystArgs(f.data, args)
	if err != nil {
		return usageError(err)
	}
	interactive := len(questions) == 0 && isTerminal(os.Stdin)
	// One reader of the terminal for the questions and the approvals: what
	// it buffered past one line is the next one's.
	stdin := bufio.NewReader(os.Stdin)
	var agents service.AgentConfig
	if len(questions) > 0 || interactive {
		m, err := f.model()
		if err != nil {
			return err
		}
		agents = f.agentConfig(m)
	}
	datasets, err := readDatasets(paths)
	if err != nil {
		return usageError(err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	p, err := f.start(ctx, d, "analyst", agents)
	if err != nil {
		return err
	}
	defer p.close()
	// The analysis is opened as every transport opens one: through the
	// service (its limits, its records, its redaction).
	an, err := p.svc.CreateAnalysis(ctx, server.DefaultTenant, service.AnalysisSpec{Datasets: datasets, Limits: sandbox.Limits{MemoryBytes: f.memory}}, nil)
	switch {
	case sandbox.IsInputError(err):
		return usageError(err)
	case err != nil:
		return platformError(err)
	}
	defer func() { _ = p.svc.DeleteAnalysis(context.WithoutCancel(ctx), server.DefaultTenant, an.ID) }()
	t := &transcript{Profile: an.Profile}
	if !f.jsonOut {
		_, _ = io.WriteString(d.stdout, an.ProfileText)
		d.stdout.flush()
	}
	if agents.Model != nil {
		d.say("analyst: model %s · %d question(s)", agents.Model.Name(), len(questions))
	}
	q := analystQuestions{svc: p.svc, id: an.ID, f: f, approve: f.approver(stdin), d: d}
	unanswered := 0
	next := questionsFrom(questions, interactive, stdin, d)
	for i := 1; ; i++ {
		text, ok := next()
		if !ok {
			break
		}
		if !f.jsonOut {
			printQuestion(d, i, text)
		}
		ans, err := q.ask(ctx, text)
		switch {
		case sandbox.IsInputError(err):
			return usageError(err)
		case err != nil:
			return platformError(err)
		}
		ta := saveAnswer(ans, f.out)
		t.Answers = append(t.Answers, ta)
		if !f.jsonOut {
			printAnswer(d, ta)
		}
		if !ans.Answered() {
			unanswered++
		}
	}
	if f.jsonOut {
		if err := t.write(d.stdout); err != nil {
			return platformError(err)
		}
	}
	if unanswered > 0 {
		return exitCodeError(1)
	}
	return nil
}

// questionsFrom returns the questions one at a time: those given, or on
// a terminal, the lines read from in after a prompt on d.
func questionsFrom(given []string, interactive bool, in *bufio.Reader, d *display) func() (string, bool) {
	if !interactive {
		return func() (string, bool) {
			if len(given) == 0 {
				return "", false
			}
			q := given[0]
			given = given[1:]
			return q, true
		}
	}
	d.say("analyst: ask a question, one per line; Ctrl-D ends")
	return func() (string, bool) {
		for {
			d.say("question?")
			line, err := in.ReadString('\n')
			if q := strings.TrimSpace(line); q != "" {
				return q, true
			}
			if err != nil {
				return "", false
			}
		}
	}
}
