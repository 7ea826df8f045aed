//! The kernel crate's shape, checked by `./x check`: it is a composition
//! root, so its files (top-level modules of `kernel/src`, outside the test
//! code in `kernel/src/testing/`) import each other in no cycle, and it
//! stays small (at most [`MAX_KERNEL_LINES`] non-blank lines). A cycle
//! means two modules that should be one, or a service that belongs in a
//! crate of its own; the check names the modules in it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use crate::Result;

/// The most non-blank lines `kernel/src` may hold outside its test code.
pub const MAX_KERNEL_LINES: usize = 5_000;

/// A module and the modules of the same crate it names (`crate::NAME`).
pub type ModuleGraph = BTreeMap<String, BTreeSet<String>>;

/// What the check found.
pub struct KernelShape {
    /// Non-blank lines outside `kernel/src/testing/`.
    pub lines: usize,
    /// Each cycle among the top-level modules, its modules sorted.
    pub cycles: Vec<Vec<String>>,
}

/// Reads `kernel/src` under `root`.
pub fn measure(root: &Path) -> Result<KernelShape> {
    let source = root.join("kernel/src");
    let mut files = Vec::new();
    collect_rust_files(&source, &mut files)?;
    let mut graph = ModuleGraph::new();
    let mut lines = 0;
    for file in files {
        let relative = file
            .strip_prefix(&source)
            .map_err(|error| error.to_string())?;
        let top = relative
            .components()
            .next()
            .and_then(|component| component.as_os_str().to_str())
            .unwrap_or_default()
            .trim_end_matches(".rs")
            .to_string();
        if top == "testing" {
            continue;
        }
        let text = fs::read_to_string(&file)
            .map_err(|error| format!("reading {}: {error}", file.display()))?;
        lines += text.lines().filter(|line| !line.trim().is_empty()).count();
        graph.entry(top.clone()).or_default().extend(
            referenced_modules(&text)
                .into_iter()
                .filter(|module| *module != top),
        );
    }
    Ok(KernelShape {
        lines,
        cycles: cycles(&graph),
    })
}

fn collect_rust_files(directory: &Path, files: &mut Vec<std::path::PathBuf>) -> Result<()> {
    let entries = fs::read_dir(directory)
        .map_err(|error| format!("reading {}: {error}", directory.display()))?;
    for entry in entries {
        let path = entry.map_err(|error| error.to_string())?.path();
        if path.is_dir() {
            collect_rust_files(&path, files)?;
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.push(path);
        }
    }
    Ok(())
}

/// The modules `text` names as `crate::NAME` or in `use crate::{A, B}`,
/// outside comments.
pub fn referenced_modules(text: &str) -> BTreeSet<String> {
    let code: String = text
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut modules = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name = identifier(item.trim());
                if !name.is_empty() {
                    modules.insert(name.to_string());
                }
            }
        } else {
            let name = identifier(rest);
            if !name.is_empty() {
                modules.insert(name.to_string());
            }
        }
    }
    modules
}

/// The identifier `text` starts with.
fn identifier(text: &str) -> &str {
    let end = text
        .find(|character: char| !(character.is_ascii_alphanumeric() || character == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The strongly connected components of more than one module (Tarjan's
/// algorithm), each sorted; names that are not modules of the graph (a
/// function of the crate root) are ignored.
pub fn cycles(graph: &ModuleGraph) -> Vec<Vec<String>> {
    struct Search<'a> {
        graph: &'a ModuleGraph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Search<'a> {
        fn visit(&mut self, module: &'a str) {
            let number = self.index.len();
            self.index.insert(module, number);
            self.low.insert(module, number);
            self.stack.push(module);
            self.on_stack.insert(module);
            for next in &self.graph[module] {
                let next = next.as_str();
                if !self.graph.contains_key(next) {
                    continue;
                }
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[module].min(self.low[next]);
                    self.low.insert(module, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[module].min(self.index[next]);
                    self.low.insert(module, low);
                }
            }
            if self.low[module] == self.index[module] {
                let mut component = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack.remove(member);
                    component.push(member.to_string());
                    if member == module {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut search = Search {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for module in graph.keys() {
        if !search.index.contains_key(module.as_str()) {
            search.visit(module);
        }
    }
    search.found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(&str, &[&str])]) -> ModuleGraph {
        edges
            .iter()
            .map(|(module, uses)| {
                (
                    module.to_string(),
                    uses.iter().map(|name| name.to_string()).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn references_are_found_in_paths_and_groups_but_not_comments() {
        let text = "//! see crate::shell\nuse crate::{linux, tracing::{self, x}};\n\
                    fn f() { crate::syscalls::event(); }\n";
        let found = referenced_modules(text);
        assert!(found.contains("linux"));
        assert!(found.contains("tracing"));
        assert!(found.contains("syscalls"));
        assert!(!found.contains("shell"));
    }

    #[test]
    fn a_cycle_is_reported_with_its_modules() {
        let found = cycles(&graph(&[
            ("a", &["b"]),
            ("b", &["c"]),
            ("c", &["a", "d"]),
            ("d", &[]),
        ]));
        assert_eq!(found, vec![vec!["a", "b", "c"]]);
    }

    #[test]
    fn layers_have_no_cycle() {
        let found = cycles(&graph(&[
            ("main", &["linux", "syscalls"]),
            ("linux", &["syscalls", "no_such_module"]),
            ("syscalls", &[]),
        ]));
        assert!(found.is_empty());
    }
}
