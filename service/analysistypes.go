package service

import (
	"github.com/crucible-sandbox/crucible/analyst"
	"github.com/crucible-sandbox/crucible/kernel"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// The analyst's types and bounds a transport needs to build an analysis
// and read its answers, named here so that transports speak to service
// and api only (the rule transports_test.go checks).
type (
	// Dataset is a file an analysis reads: its name (in the session,
	// data/<name>) and its content.
	Dataset = analyst.Dataset
	// AnalysisAnswer is an analysis's answer, as api.AnalysisQuestion's
	// Answer holds it in JSON.
	AnalysisAnswer = analyst.Answer
	// CleanSummary is what a cleaning of a dataset changed, in an answer.
	CleanSummary = analyst.CleanSummary
	// ResultTable is a table of an answer.
	ResultTable = analyst.ResultTable
	// ChartAxes are the labels of a chart's axes.
	ChartAxes = kernel.AxesLabels
)

// The bounds of an analysis's datasets.
const (
	// MaxDatasets is how many datasets an analysis reads at most.
	MaxDatasets = analyst.MaxDatasets
	// MaxDatasetBytes is the largest dataset an analysis reads.
	MaxDatasetBytes = analyst.MaxDatasetBytes
)

// DefaultAnalysisLimits returns the session limits of an analysis for
// the fields a request leaves zero (the disk grows with the datasets).
func DefaultAnalysisLimits() sandbox.Limits { return analyst.DefaultLimits }
