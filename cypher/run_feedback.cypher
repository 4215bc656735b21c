// Append one feedback entry (JSON) to a run.
MATCH (r:TogRun {id: $run})
SET r.feedback = coalesce(r.feedback, []) + [$entry]
RETURN count(r) AS found
