// Package analyst holds the data-analysis agent's datasets and their
// profile: an analysis is a sandboxed Python session in which each
// dataset (CSV, TSV, Excel, JSON, JSON Lines) is placed read-only under
// data/ and loaded into a pandas DataFrame named after its file (and df
// when there is one), and whose profile (shape, columns and dtypes,
// missing values, distinct counts, sample rows, summary statistics, top
// values and warnings) is computed in the sandbox and returned as JSON.
//
// Open starts an analysis. The profile renders in full for a user
// (Profile.Text) and within a stated budget for a model
// (Profile.ForModel).
package analyst
