// Forget the samples kept since a load began (questions asked meanwhile may
// have made them from a half-written pair).
MATCH (s:TogSample) WHERE NOT s.key IN $keep DELETE s
