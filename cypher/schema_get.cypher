// The kept look-ahead schema of a batch of relations (keys: relation and direction joined by a newline).
UNWIND $keys AS key
MATCH (s:TogSchema {key: key})
RETURN key, s.follows AS follows
