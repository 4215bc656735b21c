// The kept samples of a batch of crowded pairs (keys: entity, relation and
// direction joined by newlines).
UNWIND $keys AS key
MATCH (s:TogSample {key: key})
RETURN key, s.degree AS degree, s.sample AS sample
