// Keep a crowded pair's degree and sample.
MERGE (s:TogSample {key: $key})
SET s.degree = $degree, s.sample = $sample
