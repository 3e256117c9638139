package retrieval

// isStopword reports whether w (lower-case) is an English stopword. The list
// is small on purpose: function words that carry no topic. Negations ("not",
// "no") are kept because error messages depend on them ("not found").
func isStopword(w []byte) bool {
	switch string(w) {
	case "a", "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at",
		"be", "been", "before", "being", "both", "but", "by",
		"can", "could", "did", "do", "does", "doing", "don't", "each", "few", "for", "from", "further",
		"had", "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how",
		"i", "i'm", "i've", "if", "in", "into", "is", "it", "it's", "its", "itself",
		"just", "me", "more", "most", "my", "myself", "of", "on", "once", "only", "or", "other", "our", "ours", "out", "own",
		"same", "she", "should", "so", "some", "such",
		"than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "through", "to", "too",
		"very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would",
		"you", "your", "yours":
		return true
	}
	return false
}

// functionWordList holds the stop words of isStopword in a fixed order:
// bit i of a FunctionWords is functionWordList[i].
var functionWordList = [...]string{
	"a", "about", "after", "again", "all", "also", "am", "an", "and", "any",
	"are", "as", "at", "be", "been", "before", "being", "both", "but", "by", "can", "could", "did",
	"do", "does", "doing", "don't", "each", "few", "for", "from", "further", "had", "has", "have",
	"having", "he", "her", "here", "hers", "him", "his", "how", "i", "i'm", "i've", "if", "in",
	"into", "is", "it", "it's", "its", "itself", "just", "me", "more", "most", "my", "myself", "of",
	"on", "once", "only", "or", "other", "our", "ours", "out", "own", "same", "she", "should", "so",
	"some", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this",
	"those", "through", "to", "too", "very", "was", "we", "were", "what", "when", "where", "which",
	"while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours",
}
