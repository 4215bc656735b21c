// Forget the kept samples, look-ahead schema and hubs' relation counts (a
// load changed the KG).
MATCH (s) WHERE s:TogSample OR s:TogSchema OR s:TogHub
CALL (s) { DELETE s } IN TRANSACTIONS OF 10000 ROWS
