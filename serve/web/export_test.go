package web

// SafeHTMLErr is safeHTMLErr for the tests of package web_test.
var SafeHTMLErr = safeHTMLErr
