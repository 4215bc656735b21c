// Forget the kept samples and look-ahead schema (a load changed the KG).
// In small transactions, as schema_clear: a sample holds up to 4,096 ids.
MATCH (s) WHERE s:TogSample OR s:TogSchema
CALL (s) { DELETE s } IN TRANSACTIONS OF 50 ROWS
