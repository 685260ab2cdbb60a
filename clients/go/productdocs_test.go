package hotkv_test

import (
	"bytes"
	"os"
	"testing"
)

// TestProductDocsCopyIsCurrent keeps clients/testdata/product-docs/rate-limiting-guide.txt, the
// copy whose snippets the Python, Node.js and Java suites run verbatim, equal to the published
// guide (../shared/product-docs beside the repository). Where the published docs are not
// beside the checkout (a bare clone) there is nothing to compare with.
func TestProductDocsCopyIsCurrent(t *testing.T) {
	published, err := os.ReadFile("../../../shared/product-docs/rate-limiting-guide.txt")
	if os.IsNotExist(err) {
		t.Skip("../shared/product-docs is not beside the repository")
	}
	if err != nil {
		t.Fatal(err)
	}
	copied, err := os.ReadFile("../testdata/product-docs/rate-limiting-guide.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(published, copied) {
		t.Fatal("clients/testdata/product-docs/rate-limiting-guide.txt differs from the published guide: " +
			"cp ../shared/product-docs/rate-limiting-guide.txt clients/testdata/product-docs/")
	}
}
