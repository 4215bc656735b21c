// Forget the samples kept since a load began (questions asked meanwhile may
// have made them from a half-written pair), in small transactions, as
// summaries_clear.
MATCH (s:TogSample) WHERE NOT s.key IN $keep
CALL (s) { DELETE s } IN TRANSACTIONS OF 50 ROWS
