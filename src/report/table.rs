//! A text table written row by row: the evidence tables of `inspect`, whose
//! rows grow with the history (a message or a chunk each). A table built
//! whole in memory (comfy-table) took about 2 KiB a row before the first
//! byte was written; this one makes two passes over the rows, the first
//! for the column widths, and holds one row at a time.
//!
//! The drawing is comfy-table's `UTF8_FULL_CONDENSED` preset with its
//! content arrangement disabled (columns as wide as their widest line, one
//! space of padding, multi-line cells spread over as many lines), so the
//! tables read as the other reports' tables do.

use std::io::{self, Write};

use unicode_width::UnicodeWidthStr;

/// Write a table of `header` and the rows `rows()` yields. `rows` is called
/// twice and must yield the same rows both times.
pub fn write<F, I>(out: &mut dyn Write, header: &[&str], rows: F) -> io::Result<()>
where
    F: Fn() -> I,
    I: Iterator<Item = Vec<String>>,
{
    let mut widths: Vec<usize> = header.iter().map(|h| width(h)).collect();
    for row in rows() {
        for (i, cell) in row.iter().enumerate().take(widths.len()) {
            widths[i] = widths[i].max(width(cell));
        }
    }
    let mut out = io::BufWriter::new(out);
    border(&mut out, &widths, '┌', '┬', '┐', '─')?;
    cells(&mut out, &widths, header.iter().copied())?;
    border(&mut out, &widths, '╞', '╪', '╡', '═')?;
    for row in rows() {
        cells(&mut out, &widths, row.iter().map(String::as_str))?;
    }
    border(&mut out, &widths, '└', '┴', '┘', '─')?;
    out.flush()
}

/// A cell's width: its widest line.
fn width(cell: &str) -> usize {
    cell.split('\n')
        .map(UnicodeWidthStr::width)
        .max()
        .unwrap_or(0)
}

fn border(
    out: &mut impl Write,
    widths: &[usize],
    left: char,
    cross: char,
    right: char,
    line: char,
) -> io::Result<()> {
    let mut s = String::new();
    s.push(left);
    for (i, w) in widths.iter().enumerate() {
        if i > 0 {
            s.push(cross);
        }
        s.extend(std::iter::repeat_n(line, w + 2));
    }
    s.push(right);
    writeln!(out, "{s}")
}

/// One row: as many lines as its tallest cell.
fn cells<'a>(
    out: &mut impl Write,
    widths: &[usize],
    row: impl Iterator<Item = &'a str>,
) -> io::Result<()> {
    let mut lines: Vec<Vec<&str>> = row.map(|c| c.split('\n').collect()).collect();
    lines.resize(widths.len(), vec![""]);
    let height = lines.iter().map(Vec::len).max().unwrap_or(1);
    for l in 0..height {
        let mut s = String::from("│");
        for (i, (cell, w)) in lines.iter().zip(widths).enumerate() {
            if i > 0 {
                s.push('┆');
            }
            let text = cell.get(l).copied().unwrap_or("");
            s.push(' ');
            s.push_str(text);
            s.extend(std::iter::repeat_n(' ', w - text.width() + 1));
        }
        s.push('│');
        writeln!(out, "{s}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use comfy_table::{ContentArrangement, Table, presets};

    fn comfy(header: &[&str], rows: &[Vec<String>]) -> String {
        let mut t = Table::new();
        t.load_preset(presets::UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_header(header.to_vec());
        for r in rows {
            t.add_row(r.clone());
        }
        format!("{t}\n")
    }

    fn ours(header: &[&str], rows: &[Vec<String>]) -> String {
        let mut out = Vec::new();
        super::write(&mut out, header, || rows.iter().cloned()).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn tables_are_drawn_as_comfy_table_draws_them() {
        let s = |v: &[&str]| v.iter().map(|c| c.to_string()).collect::<Vec<_>>();
        let cases: Vec<(Vec<&str>, Vec<Vec<String>>)> = vec![
            (vec!["#", "line", "preview"], vec![]),
            (
                vec!["#", "line", "role", "tool ids", "preview"],
                vec![
                    s(&["0", "1", "system", "", "You are an ops assistant."]),
                    s(&["2", "3", "assistant", "call_0\ncall_1", "run_ssh(…)"]),
                    s(&["10", "11", "user", "", "日本語 and émoji 🦀"]),
                    s(&["", "", "", "", ""]),
                ],
            ),
            (vec!["a-wide-header", "b"], vec![s(&["x", "y\n\nz"])]),
            (
                vec!["a", "b"],
                vec![s(&["  padded  ", "x"]), s(&["only one"])],
            ),
        ];
        for (header, rows) in cases {
            assert_eq!(ours(&header, &rows), comfy(&header, &rows), "{rows:?}");
        }
    }
}
