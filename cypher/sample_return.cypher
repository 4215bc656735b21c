// A crowded pair's sample back to the caller (the end of sample_out / sample_in).
RETURN x.id AS x
