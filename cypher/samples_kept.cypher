// The keys of the kept samples (a load that follows them merges its edges in).
MATCH (s:TogSample) RETURN s.key AS key
