// The furthest line a load's committed transactions may have written.
OPTIONAL MATCH (r:TogLoadReach {source: $source})
RETURN coalesce(max(r.lines), 0) AS lines
