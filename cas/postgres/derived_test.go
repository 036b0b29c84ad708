package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/castest"
)

func TestDerived(t *testing.T) {
	needPostgres(t)
	castest.RunDerived(t, func(t *testing.T) cas.Derived { return newStore(t) })
}

// TestDerivedDropped: with the table derived dropped the store keeps no
// entries, and says nothing is wrong.
func TestDerivedDropped(t *testing.T) {
	needPostgres(t)
	ctx := t.Context()
	s := newStore(t)
	if err := s.PutDerived(ctx, "chain/x", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if _, err := admin(t).Exec(ctx, "DROP TABLE "+pgx.Identifier{s.Schema(), "derived"}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.GetDerived(ctx, "chain/x"); ok || err != nil {
		t.Errorf("GetDerived with the table dropped = ok %v, %v; want no entry, no error", ok, err)
	}
	if err := s.PutDerived(ctx, "chain/x", []byte("v")); err != nil {
		t.Errorf("PutDerived with the table dropped: %v", err)
	}
	if err := s.DropDerived(ctx, "chain/x"); err != nil {
		t.Errorf("DropDerived with the table dropped: %v", err)
	}
}
