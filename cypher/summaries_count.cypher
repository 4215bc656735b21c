// How many samples, schema entries and hubs' relation counts are kept.
CALL () { MATCH (s:TogSample) RETURN count(s) AS samples }
CALL () { MATCH (s:TogSchema) RETURN count(s) AS schema }
CALL () { MATCH (h:TogHub) RETURN count(h) AS hubs }
RETURN samples, schema, hubs
