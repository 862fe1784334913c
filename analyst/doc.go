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
//
// Ask answers a question about the data with the code agent (package
// agent), in the analysis's session: the model sees the profile and the
// conversation so far, its code runs where the DataFrames are loaded, and
// the Answer carries the text, the code and output that produced it, its
// tables (HTML and data), its charts (PNG with their titles and axis
// labels) and the files it wrote. Follow-up questions see the earlier
// variables and answers (Conversation). Two helpers are defined in the
// session for the model: show_table, and crucible_clean, which normalises
// a dataset (trim whitespace, standardise dates, remove duplicates) and
// returns a summary of the changes (Answer.Cleaning): it reads dates and
// numbers with the profile's own parser (textvalues.py), converts numbers
// written with separators, percent signs or a currency, and unifies the
// case of categories.
package analyst
