enum FieldFormsModule {}
