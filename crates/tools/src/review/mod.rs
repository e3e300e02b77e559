//! Reviews: what a review covers ([`scope`]: the change read with git),
//! that change as data ([`diff`]), the findings the model reports
//! ([`finding`]) through the `report_finding` tool ([`tool`]), offered
//! only in reviews.

pub mod diff;
pub mod finding;
pub mod scope;
pub mod tool;

pub use diff::{Content, FileDiff, FileStatus, ScopeDiff, Side};
pub use finding::{Finding, Fix, Replacement};
pub use scope::{read, Change, Scope};
pub use tool::{Findings, ReportFindingTool};
