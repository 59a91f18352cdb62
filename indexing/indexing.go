package indexing

import "github.com/kopfgo/kopfgo/internal/indexing"

type (
	Index[K comparable, V any] = indexing.Index[K, V]
	Func[K comparable, V any]  = indexing.Func[K, V]
)
