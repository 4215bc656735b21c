// A crowded pair's sample kept by the server, with the degree the caller
// counted, without travelling (the end of sample_out / sample_in, when a
// load's end samples the biggest pairs): see sample_save.
WITH collect(x.id) AS sample
MERGE (s:TogSample {key: $key})
SET s.degree = $degree, s.sample = sample
RETURN size(sample) AS n
