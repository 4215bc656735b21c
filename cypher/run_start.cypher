CREATE (:TogRun {id: $id, question: $question, started: $started, status: $status,
                 method: $method, config: $config})
