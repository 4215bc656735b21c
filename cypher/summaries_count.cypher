// How many samples and schema entries are kept.
CALL () { MATCH (s:TogSample) RETURN count(s) AS samples }
CALL () { MATCH (s:TogSchema) RETURN count(s) AS schema }
RETURN samples, schema
