//! SQL rendering: one renderer per dialect over the statement IR.
