package analyst

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultModelBudget is the size, in characters, ForModel keeps a
// profile to unless told otherwise: about 4,000 tokens.
const DefaultModelBudget = 16_000

// Text renders the whole profile for a user: every table, every column
// with its statistics, top values and warnings, and the sample rows.
func (p *Profile) Text() string {
	var b strings.Builder
	for i, t := range p.Tables {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(t.header(p.DF))
		if t.Error != "" {
			continue
		}
		for _, w := range t.Warnings {
			fmt.Fprintf(&b, "  warning: %s\n", w)
		}
		for _, c := range t.ColumnProfiles {
			b.WriteString("  " + c.line() + "\n")
			for _, w := range c.Warnings {
				fmt.Fprintf(&b, "      warning: %s\n", w)
			}
		}
		if len(t.Sample) > 0 {
			fmt.Fprintf(&b, "  first %d rows:\n", len(t.Sample))
			b.WriteString(sampleLines(t, len(t.ColumnProfiles), len(t.Sample)))
		}
	}
	return b.String()
}

// ForModel renders the profile within budget characters for a model's
// prompt. Each table gets an equal share: its header, then its columns as
// long as they fit, then one line that says how many columns were left
// out, with their dtypes and as many of their names as fit; sample rows
// come last, if there is room. A budget too small for even that is cut,
// and says so. A budget of zero or less means DefaultModelBudget.
func (p *Profile) ForModel(budget int) string {
	if budget <= 0 {
		budget = DefaultModelBudget
	}
	const cutNote = "\n[profile cut to fit its budget]"
	var b strings.Builder
	share := budget / max(1, len(p.Tables))
	for _, t := range p.Tables {
		b.WriteString(t.forModel(p.DF, share))
	}
	out := b.String()
	if utf8.RuneCountInString(out) <= budget {
		return out
	}
	return truncateRunes(out, max(0, budget-len(cutNote))) + cutNote
}

// forModel renders one table within share characters (but for its
// header, which is always kept).
func (t Table) forModel(df string, share int) string {
	var b strings.Builder
	b.WriteString(t.header(df))
	if t.Error != "" {
		return b.String()
	}
	for _, w := range t.Warnings {
		b.WriteString("  warning: " + w + "\n")
	}
	used := utf8.RuneCountInString(b.String())
	const reserve = 300 // for the line naming the columns left out
	shown := 0
	for _, c := range t.ColumnProfiles {
		line := "  " + c.line()
		for _, w := range c.Warnings {
			line += "; warning: " + w
		}
		line += "\n"
		n := utf8.RuneCountInString(line)
		if used+n > share-reserve {
			break
		}
		b.WriteString(line)
		used += n
		shown++
	}
	if rest := t.ColumnProfiles[shown:]; len(rest) > 0 {
		line := omitted(rest, max(80, share-used))
		b.WriteString(line)
		used += utf8.RuneCountInString(line)
	}
	if len(t.Sample) > 0 && shown > 0 {
		for rows := min(3, len(t.Sample)); rows > 0; rows-- {
			s := fmt.Sprintf("  first %d rows:\n", rows) + sampleLines(t, shown, rows)
			if used+utf8.RuneCountInString(s) <= share {
				b.WriteString(s)
				break
			}
		}
	}
	return b.String()
}

// omitted is the line standing for columns left out: how many, their
// dtypes, and the names that fit in room characters.
func omitted(cols []Column, room int) string {
	dtypes := map[string]int{}
	for _, c := range cols {
		dtypes[c.DType]++
	}
	kinds := make([]string, 0, len(dtypes))
	for k := range dtypes {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		return dtypes[kinds[i]] > dtypes[kinds[j]] || dtypes[kinds[i]] == dtypes[kinds[j]] && kinds[i] < kinds[j]
	})
	for i, k := range kinds {
		kinds[i] = fmt.Sprintf("%d %s", dtypes[k], k)
	}
	line := fmt.Sprintf("  ... %d more columns not shown (%s): ", len(cols), strings.Join(kinds, ", "))
	names := 0
	for _, c := range cols {
		n := strconv.Quote(c.Name)
		if utf8.RuneCountInString(line)+len(n)+12 > room {
			break
		}
		if names > 0 {
			line += ", "
		}
		line += n
		names++
	}
	if names < len(cols) {
		line += fmt.Sprintf("%s... (%d more)", map[bool]string{true: ", ", false: ""}[names > 0], len(cols)-names)
	}
	return line + "\n"
}

// header is a table's first line: its DataFrame, file, format and shape,
// or why it could not be read.
func (t Table) header(df string) string {
	name := t.Name
	if df == t.Name {
		name += " (also df)"
	}
	src := t.Dataset
	if t.Sheet != "" {
		src += ", sheet " + strconv.Quote(t.Sheet)
	}
	if t.Error != "" {
		return fmt.Sprintf("%s (%s): %s; no DataFrame\n", t.Name, src, t.Error)
	}
	var reading []string
	for _, k := range []string{"encoding", "delimiter", "decimal", "thousands"} {
		if v, ok := t.Reading[k]; ok {
			reading = append(reading, k+" "+strconv.Quote(v))
		}
	}
	how := t.Format
	if len(reading) > 0 {
		how += ", " + strings.Join(reading, ", ")
	}
	return fmt.Sprintf("DataFrame %s from %s (%s): %d rows x %d columns\n", name, src, how, t.Rows, t.Columns)
}

// line describes a column on one line.
func (c Column) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", strconv.Quote(c.Name), c.DType)
	if c.Inferred != "" {
		b.WriteString(" (" + c.Inferred + ")")
	}
	fmt.Fprintf(&b, ", %d missing, %d distinct", c.Missing, c.Distinct)
	if s := c.Summary; s != nil {
		for _, f := range []struct {
			name string
			v    *float64
		}{{"mean", s.Mean}, {"std", s.Std}, {"min", s.Min}, {"p25", s.P25}, {"median", s.Median}, {"p75", s.P75}, {"max", s.Max}} {
			if f.v != nil {
				fmt.Fprintf(&b, ", %s %s", f.name, strconv.FormatFloat(*f.v, 'g', 6, 64))
			}
		}
		if s.MinText != "" {
			fmt.Fprintf(&b, ", from %s to %s", s.MinText, s.MaxText)
		}
	}
	if len(c.Top) > 0 {
		top := make([]string, len(c.Top))
		for i, v := range c.Top {
			top[i] = fmt.Sprintf("%s (%d)", strconv.Quote(v.Value), v.Count)
		}
		b.WriteString(", top " + strings.Join(top, ", "))
	}
	return b.String()
}

// sampleLines renders the first rows of t's first cols columns, tab-
// separated, under a line of their names.
func sampleLines(t Table, cols, rows int) string {
	var b strings.Builder
	names := make([]string, min(cols, len(t.ColumnProfiles)))
	for i := range names {
		names[i] = t.ColumnProfiles[i].Name
	}
	b.WriteString("    " + strings.Join(names, "\t") + "\n")
	for _, r := range t.Sample[:min(rows, len(t.Sample))] {
		b.WriteString("    " + oneLine.Replace(strings.Join(r[:min(cols, len(r))], "\x00")) + "\n")
	}
	return b.String()
}

// oneLine keeps a sample row on one line: the separators the data holds
// become spaces, and the join's NUL a tab.
var oneLine = strings.NewReplacer("\t", " ", "\n", " ", "\r", " ", "\x00", "\t")

// truncateRunes returns s's first n characters.
func truncateRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
