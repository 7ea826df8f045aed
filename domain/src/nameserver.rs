//! The in-kernel nameserver (000 §3.1): exporters publish domains under
//! global names and versions; importers ask by name, and the exporter's
//! authorizer is called with the importer's identity on every import.

use alloc::{collections::BTreeMap, string::String, sync::Arc, vec::Vec};
use core::fmt;

use dispatch::{Denied, Principal};
use spin::Mutex;

use crate::linker::Domain;

/// An interface version: an import of `major.minor` accepts any export with
/// the same major and a minor at least as high.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Incompatible changes.
    pub major: u32,
    /// Compatible additions.
    pub minor: u32,
}

impl Version {
    /// `major.minor`.
    pub const fn new(major: u32, minor: u32) -> Self {
        Version { major, minor }
    }

    fn satisfies(self, wanted: Version) -> bool {
        self.major == wanted.major && self.minor >= wanted.minor
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The exporter's authorization procedure for imports.
pub trait ImportAuthorizer: Send + Sync {
    /// Allows or refuses `importer` importing `name`.
    fn authorize(&self, importer: Principal, name: &str, version: Version) -> Result<(), Denied>;
}

impl<F> ImportAuthorizer for F
where
    F: Fn(Principal, &str, Version) -> Result<(), Denied> + Send + Sync,
{
    fn authorize(&self, importer: Principal, name: &str, version: Version) -> Result<(), Denied> {
        self(importer, name, version)
    }
}

/// Why a nameserver operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NameError {
    /// That name and version are already exported.
    AlreadyExported {
        /// The name.
        name: String,
        /// The version.
        version: Version,
    },
    /// Nothing is exported under the name.
    NotFound(String),
    /// Exported, but in no compatible version.
    NoCompatibleVersion {
        /// The name.
        name: String,
        /// The version asked for.
        wanted: Version,
    },
    /// The exporter's authorizer refused the importer.
    Denied {
        /// The name.
        name: String,
        /// The authorizer's reason.
        denied: Denied,
    },
    /// Only the exporter may withdraw an export.
    NotExporter,
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameError::AlreadyExported { name, version } => {
                write!(f, "{name} {version} is already exported")
            }
            NameError::NotFound(name) => write!(f, "nothing is exported as {name}"),
            NameError::NoCompatibleVersion { name, wanted } => {
                write!(f, "no version of {name} compatible with {wanted}")
            }
            NameError::Denied { name, denied } => write!(f, "import of {name} {denied}"),
            NameError::NotExporter => f.write_str("only the exporter may withdraw an export"),
        }
    }
}

struct Exported {
    version: Version,
    domain: Domain,
    exporter: Principal,
    authorizer: Option<Arc<dyn ImportAuthorizer>>,
}

/// The nameserver.
#[derive(Default)]
pub struct NameServer {
    /// Name → exports in increasing version order.
    entries: Mutex<BTreeMap<String, Vec<Exported>>>,
}

impl NameServer {
    /// An empty nameserver.
    pub fn new() -> Self {
        Self::default()
    }

    /// Exports `domain` as `name` `version`, optionally guarded by an
    /// authorizer called on every import.
    pub fn export(
        &self,
        name: &str,
        version: Version,
        domain: Domain,
        exporter: Principal,
        authorizer: Option<Arc<dyn ImportAuthorizer>>,
    ) -> Result<(), NameError> {
        let mut entries = self.entries.lock();
        let versions = entries.entry(name.into()).or_default();
        if versions.iter().any(|e| e.version == version) {
            return Err(NameError::AlreadyExported {
                name: name.into(),
                version,
            });
        }
        let at = versions.partition_point(|e| e.version < version);
        versions.insert(
            at,
            Exported {
                version,
                domain,
                exporter,
                authorizer,
            },
        );
        Ok(())
    }

    /// Imports the newest compatible version of `name` for `importer`,
    /// consulting the exporter's authorizer.
    pub fn import(
        &self,
        name: &str,
        wanted: Version,
        importer: Principal,
    ) -> Result<Domain, NameError> {
        // Pick under the lock, authorize outside it: the authorizer is the
        // exporter's code and may itself use the nameserver.
        let (version, domain, authorizer) = {
            let entries = self.entries.lock();
            let versions = entries
                .get(name)
                .ok_or_else(|| NameError::NotFound(name.into()))?;
            let exported = versions
                .iter()
                .rev()
                .find(|e| e.version.satisfies(wanted))
                .ok_or_else(|| NameError::NoCompatibleVersion {
                    name: name.into(),
                    wanted,
                })?;
            (
                exported.version,
                exported.domain.clone(),
                exported.authorizer.clone(),
            )
        };
        if let Some(authorizer) = authorizer {
            authorizer
                .authorize(importer, name, version)
                .map_err(|denied| NameError::Denied {
                    name: name.into(),
                    denied,
                })?;
        }
        Ok(domain)
    }

    /// Withdraws an export; only its exporter may.
    pub fn withdraw(
        &self,
        name: &str,
        version: Version,
        requester: Principal,
    ) -> Result<(), NameError> {
        let mut entries = self.entries.lock();
        let versions = entries
            .get_mut(name)
            .ok_or_else(|| NameError::NotFound(name.into()))?;
        let at = versions
            .iter()
            .position(|e| e.version == version)
            .ok_or_else(|| NameError::NoCompatibleVersion {
                name: name.into(),
                wanted: version,
            })?;
        if versions[at].exporter != requester {
            return Err(NameError::NotExporter);
        }
        versions.remove(at);
        if versions.is_empty() {
            entries.remove(name);
        }
        Ok(())
    }

    /// Everything exported, by name and version (for the shell).
    pub fn list(&self) -> Vec<(String, Version)> {
        let entries = self.entries.lock();
        entries
            .iter()
            .flat_map(|(name, versions)| versions.iter().map(move |e| (name.clone(), e.version)))
            .collect()
    }
}
