use super::Gen;
impl Gen<'_> {
    pub(crate) fn gen_schema(&mut self) {}
    pub(crate) fn gen_data(&mut self) -> Vec<crate::model::TableData> {
        vec![]
    }
}
