use super::Gen;
impl Gen<'_> {
    pub(crate) fn gen_txns(&mut self) -> Vec<crate::model::Txn> {
        vec![]
    }
    pub(crate) fn gen_submit_order(
        &mut self,
        _t: &[crate::model::Txn],
    ) -> Vec<crate::model::StmtRef> {
        vec![]
    }
}
