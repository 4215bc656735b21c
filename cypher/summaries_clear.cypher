// Forget the kept samples and look-ahead schema (a load changed the KG).
MATCH (s) WHERE s:TogSample OR s:TogSchema
CALL (s) { DELETE s } IN TRANSACTIONS OF 10000 ROWS
