MATCH (r:TogRun {id: $id})
SET r.status = $status, r.answer = $answer, r.stats = $stats, r.finished = $finished
